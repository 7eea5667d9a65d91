"""What results say: reading them (results), thresholds with bootstrap intervals
(thresholds), the closed forms and ODEs they are compared with (theory), and figures
(plots, the only module that imports matplotlib). xarray in, xarray out."""
