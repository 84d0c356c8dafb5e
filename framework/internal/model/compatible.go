package model

import (
	"fmt"
	"maps"
	"slices"

	"github.com/lockstep-dev/lockstep/handshake"
)

// CheckConversions checks the conversions from the earlier version old to
// later, a version that derives from it through a change compatible both
// ways: every method and every topic of old has a conversion and later
// declares it too, every topic of old is server-written in both (the
// runtime does not convert the topics clients write), and nothing old
// does not declare is converted. methods and topics name what the
// conversions cover, each true when its conversion is whole.
func CheckConversions(old, later *handshake.Contract, methods, topics map[string]bool) error {
	for _, m := range slices.Sorted(maps.Keys(old.Methods)) {
		if _, ok := later.Methods[m]; !ok {
			return fmt.Errorf("%s, whose method %s it does not declare", old.Version, m)
		}
		if !methods[m] {
			return fmt.Errorf("%s with no conversion for method %s (ConvertCompatibleMethod)", old.Version, m)
		}
	}
	for _, m := range slices.Sorted(maps.Keys(methods)) {
		if _, ok := old.Methods[m]; !ok {
			return fmt.Errorf("%s, converting method %s, which %s does not declare", old.Version, m, old.Version)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(old.Topics)) {
		if old.Topics[name].Writer != handshake.RoleServer {
			return fmt.Errorf("%s, whose topic %s is written by clients: the runtime does not convert such topics between versions", old.Version, name)
		}
		if t, ok := later.Topics[name]; !ok || t.Writer != handshake.RoleServer {
			return fmt.Errorf("%s, whose server-written topic %s it does not declare as such", old.Version, name)
		}
		if !topics[name] {
			return fmt.Errorf("%s with no conversion for topic %s (ConvertCompatibleTopic)", old.Version, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		if _, ok := old.Topics[name]; !ok {
			return fmt.Errorf("%s, converting topic %s, which %s does not declare", old.Version, name, old.Version)
		}
	}
	return nil
}
