// Package formats is the golden case for formats: date-time as time.Time, sized integers and floats, and string formats kept as strings.
package formats

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
