"""Worker tests: a package so that the shared embedded worker (a package-scoped fixture) ends with it."""
