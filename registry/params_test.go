package registry

import (
	"context"
	"errors"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
)

// paramsProvider checks its parameters without opening anything: ia_params
// must be "good", platform_params empty or "p=1".
type paramsProvider struct{}

func (paramsProvider) Open(context.Context, api.OpenParams) (api.IA, error) {
	panic("a static check must not open the IA")
}

func (paramsProvider) CheckParams(p api.OpenParams) (iaParams, platformParams error) {
	if p.Params != "good" {
		iaParams = api.Errorf(api.InvalidParameter, api.NoSubtype, "paramstest: ia_params "+p.Params+" is not good")
	}
	if p.PlatformParams != "" && p.PlatformParams != "p=1" {
		platformParams = errors.New("paramstest: platform_params " + p.PlatformParams + " is not p=1")
	}
	return iaParams, platformParams
}

func init() { provider.Register("paramstest", paramsProvider{}) }

// The parameters a provider refuses by their form alone make the file
// invalid, each at the position of its value (or of the IA's entry when
// the key is absent), and the message is the provider's without the DAT
// return code.
func TestConfigParamChecks(t *testing.T) {
	const ia = "provider = \"paramstest\"\napi_version = \"u2.0\"\n"
	_, err := ParseConfig("f", []byte("[[ia]]\nname = \"a\"\n"+ia+
		"ia_params = \"bad\"\nplatform_params = \"q=2\"\n"+ // lines 5 and 6
		"[[ia]]\nname = \"b\"\n"+ia+ // line 7: no ia_params
		"[[ia]]\nname = \"c\"\n"+ia+"ia_params = \"good\"\nplatform_params = \"p=1\"\n"))
	wantProblems(t, configErrors(t, err),
		`5:13: paramstest: ia_params bad is not good`,
		`6:19: paramstest: platform_params q=2 is not p=1`,
		`7:1: paramstest: ia_params  is not good`)
	if ps := configErrors(t, err); ps[0] != "5:13: paramstest: ia_params bad is not good" {
		t.Errorf("the message keeps the return code: %q", ps[0])
	}

	// The classic form: at the quoted fields. A line for godat's C library
	// is checked where the IA it stands for is defined, and a line godat
	// cannot serve not at all.
	_, err = ParseConfig("c", []byte(
		"a u2.0 threadsafe default libgodat-paramstest.so v \"bad\" \"q=2\"\n"+
			"b u2.0 threadsafe default libdat2.so.2 v \"a\" \"\"\n"+
			"c u2.0 threadsafe default libother.so v \"bad\" \"q=2\"\n"))
	wantProblems(t, configErrors(t, err),
		`1:52: paramstest: ia_params bad is not good`,
		`1:58: paramstest: platform_params q=2 is not p=1`)

	// A [[plugin]] of the provider's name serves the IA (unavailable, as
	// the name is taken): the built-in provider's check does not apply.
	cfg, err := ParseConfig("p", []byte("[[plugin]]\nname = \"paramstest\"\npath = \"/x\"\n[[ia]]\nname = \"a\"\n"+ia+"ia_params = \"bad\"\n"))
	if err != nil || len(cfg.IAs) != 1 {
		t.Fatalf("an IA of a plugin: %v", err)
	}
	if l := New(cfg).List(); l[0].Available {
		t.Errorf("an IA of a plugin named like a built-in provider is available: %+v", l[0])
	}
}
