module github.com/lockstep-dev/lockstep/bench

go 1.26.0

replace github.com/lockstep-dev/lockstep => ../

require (
	connectrpc.com/connect v1.21.1
	github.com/lockstep-dev/lockstep v0.0.0
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/go-chi/chi/v5 v5.5.0 // indirect
	github.com/gowebpki/jcs v1.0.2 // indirect
	github.com/hashicorp/go-version v1.9.0 // indirect
	github.com/jonboulle/clockwork v0.5.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v5 v5.3.1 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
)
