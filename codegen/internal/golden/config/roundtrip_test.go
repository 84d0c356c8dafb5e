package config

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

const file = `{
  "version": "3.9",
  "x-defaults": {"restart": "always"},
  "services": {
    "web": {
      "image": "nginx:1.27",
      "command": ["nginx", "-g", "daemon off;"],
      "environment": {"MODE": "prod", "WORKERS": 4, "DEBUG": false, "UNSET": null},
      "ports": [80, "443:443", {"target": 8080, "published": "8080", "protocol": "tcp"}],
      "depends_on": {"db": {"condition": "service_healthy"}},
      "restart": "on-failure",
      "deploy": {"replicas": 2, "resources": {"limits": {"cpus": "0.5", "memory": "512M"}, "reservations": {"cpus": 0.25}}},
      "healthcheck": {"test": "curl -f http://localhost", "interval": "PT10S", "disable": false},
      "x-team": "edge"
    },
    "db": {
      "build": {"context": ".", "args": ["A=1"], "x-cache": true},
      "command": null,
      "environment": ["POSTGRES_DB=app"],
      "depends_on": ["cache"],
      "deploy": null
    },
    "cache": {"build": "./cache", "healthcheck": {"test": null, "retries": 0}}
  },
  "volumes": {"data": {"driver": "local", "labels": {"tier": "db"}}, "scratch": null}
}`

func TestRoundTrip(t *testing.T) {
	c := roundtrip.Check[Config](t, Contract, "Config", file)
	web := c.Services["web"]
	if env, err := web.Environment.AsObject(); err != nil || env["UNSET"] != nil || env["MODE"] == nil {
		t.Errorf("environment: %v, %v", env, err)
	}
	if ports := web.Ports; len(ports) != 3 {
		t.Errorf("ports: %v", ports)
	} else if n, err := ports[0].AsNumber(); err != nil || n != 80 {
		t.Errorf("port 0: %v, %v", n, err)
	}
	if string(web.AdditionalProperties["x-team"]) != `"edge"` || string(c.AdditionalProperties["x-defaults"]) == "" {
		t.Errorf("extension members were lost: %v %v", web.AdditionalProperties, c.AdditionalProperties)
	}
	if d, ok := web.Deploy.Get(); !ok || d.GetReplicas() != 2 {
		t.Errorf("deploy: %v", web.Deploy)
	}
	cache := c.Services["cache"]
	if cache.Healthcheck.GetRetries() != 0 || !cache.Healthcheck.Test.IsNull() || c.Services["db"].Command.IsZero() {
		t.Errorf("cache: %+v", cache.Healthcheck)
	}
	if c.Volumes["scratch"] != nil || c.Volumes["data"] == nil {
		t.Errorf("volumes: %v", c.Volumes)
	}
	roundtrip.Check[Config](t, Contract, "Config", `{"services": {}}`)
}

// TestCombinatorConstraints checks that branches which only add
// constraints (anyOf required, if/then) still validate at run time.
func TestCombinatorConstraints(t *testing.T) {
	for _, bad := range []string{
		`{"services": {"s": {}}}`,
		`{"services": {"s": {"image": "x", "restart": "on-failure"}}}`,
		`{"services": {"bad name!": {"image": "x"}}}`,
		`{"services": {}, "unknown": 1}`,
	} {
		if err := Contract.ValidateJSON("Config", []byte(bad)); err == nil {
			t.Errorf("%s validated", bad)
		}
	}
}
