package main

import (
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-platforms", "linux/amd64, linux/arm64/v8", "-registry", "127.0.0.1:5050",
		"-label", "org.opencontainers.image.revision=abc", "example.com/cmd/a-controller"})
	if err != nil {
		t.Fatal(err)
	}
	want := []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}}
	if len(o.platforms) != 2 || !o.platforms[0].Equals(want[0]) || !o.platforms[1].Equals(want[1]) {
		t.Errorf("platforms %v, want %v", o.platforms, want)
	}
	if o.naming.Tag != "dev" || o.naming.Repo != "flotilla" || o.labels["org.opencontainers.image.revision"] != "abc" {
		t.Errorf("options %+v", o)
	}
	if !o.insecureRegistry() {
		t.Error("a loopback registry is not spoken to over http")
	}
	o.insecure = "false"
	if o.insecureRegistry() {
		t.Error("-insecure=false ignored")
	}
}

func TestParseFlagsRejects(t *testing.T) {
	for name, args := range map[string][]string{
		"no packages":   {"-platforms", "linux/amd64"},
		"bad platform":  {"-platforms", "linux", "p"},
		"empty entry":   {"-platforms", "linux/amd64,", "p"},
		"bad label":     {"-label", "novalue", "p"},
		"bad -insecure": {"-insecure", "maybe", "p"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%s: accepted %v", name, args)
		}
	}
}
