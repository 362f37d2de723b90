Checked 551 files in 1120ms. No fixes applied.
