"""The general path: every model of the zoo (attention variants, heads, matrices, masks,
noise, FFN term), one row at a time with O(n) scratch. drive.integrate runs one job."""
