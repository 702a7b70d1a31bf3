package targets_test

import (
	// The built-in and container targets the tests start, registered as
	// the xdsconform command registers them.
	_ "github.com/xdsconform/xdsconform/docker"
	_ "github.com/xdsconform/xdsconform/peers/builtin"
)
