"""Browser tests: a package so that the site, its worker and Chromium (package-scoped fixtures) end with it."""
