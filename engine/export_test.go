package engine

// AfterRunLimit lets engine_test shorten the bound on after-run checks.
var AfterRunLimit = &afterRunLimit
