module github.com/xdsconform/xdsconform/tools/licenses

go 1.26.8

require github.com/google/licensecheck v0.3.1
