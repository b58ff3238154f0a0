// Package policy_test checks the admission policies of config/policy against a real API server, installed from the
// same kustomize tree that `kubectl apply -k config/default` installs.
package policy_test

import (
	"os"
	"testing"

	"github.com/gleaner-sh/gleaner/test/testenv"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }
