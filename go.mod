module github.com/lockstep-dev/lockstep

go 1.26

require github.com/hashicorp/go-version v1.9.0

require (
	github.com/go-chi/chi/v5 v5.5.0 // indirect
	github.com/gowebpki/jcs v1.0.2 // indirect
	github.com/jonboulle/clockwork v0.5.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v5 v5.3.1 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
)
