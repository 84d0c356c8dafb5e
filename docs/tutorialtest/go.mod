module github.com/lockstep-dev/lockstep/docs/tutorialtest

go 1.26.0

require github.com/rogpeppe/go-internal v1.14.1

require (
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/tools v0.51.0 // indirect
)
