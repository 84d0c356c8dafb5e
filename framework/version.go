package framework

// Version is the runtime's own version.
const Version = "0.1.0"

// IsAtLeastVersion0_1_0 is referenced by generated code so that a package
// generated for this runtime fails to compile against an older one, instead
// of failing at run time.
const IsAtLeastVersion0_1_0 = true
