package e2e

import (
	"os"
	"testing"
)

// suite is the package's cluster; TestMain starts and stops it.
var suite = NewSuite()

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }
