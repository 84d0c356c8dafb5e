package framework

// Version is the runtime's own version.
const Version = "0.2.0"

// IsAtLeastVersion0_1_0 is referenced by generated code so that a package
// generated for this runtime fails to compile against an older one, instead
// of failing at run time.
const IsAtLeastVersion0_1_0 = true

// IsAtLeastVersion0_2_0 is referenced by the generated code of a contract
// version that derives compatibly from an earlier one (it calls
// [MustCompatibleContract], [ServeCompatible] and their conversions), so
// that it fails to compile against a runtime without them.
const IsAtLeastVersion0_2_0 = true
