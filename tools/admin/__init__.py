"""Admin toolset: prospect brands, website scans, content pipeline, claim links and the prospect site."""
