// Package quantity reads and writes the resource quantities of Kubernetes
// ("3500m", "16Gi", "110") as the integers the version 2 contracts carry:
// CPU in millicores, memory in bytes, counts as they are. It accepts the
// forms the contracts' Quantity pattern allows: a decimal number with an
// optional suffix m, k, M, G, T, Ki, Mi, Gi or Ti.
package quantity

import (
	"fmt"
	"math/big"
	"regexp"
	"strconv"
)

// pattern is the Quantity pattern of the 1.0.0 contracts.
var pattern = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$`)

// multipliers gives each suffix's factor.
var multipliers = map[string]*big.Rat{
	"":   big.NewRat(1, 1),
	"m":  big.NewRat(1, 1000),
	"k":  big.NewRat(1e3, 1),
	"M":  big.NewRat(1e6, 1),
	"G":  big.NewRat(1e9, 1),
	"T":  big.NewRat(1e12, 1),
	"Ki": big.NewRat(1<<10, 1),
	"Mi": big.NewRat(1<<20, 1),
	"Gi": big.NewRat(1<<30, 1),
	"Ti": big.NewRat(1<<40, 1),
}

// parse returns q's exact value times scale, rounded up to an integer, as
// Kubernetes rounds quantities up to its smallest unit.
func parse(q string, scale int64) (int64, error) {
	m := pattern.FindStringSubmatch(q)
	if m == nil {
		return 0, fmt.Errorf("quantity %q: want a decimal number with an optional suffix m, k, M, G, T, Ki, Mi, Gi or Ti", q)
	}
	v, ok := new(big.Rat).SetString(m[1])
	if !ok {
		return 0, fmt.Errorf("quantity %q: not a number", q)
	}
	v.Mul(v, multipliers[m[2]])
	v.Mul(v, big.NewRat(scale, 1))
	n := new(big.Int).Quo(v.Num(), v.Denom())
	if new(big.Rat).SetInt(n).Cmp(v) != 0 {
		n.Add(n, big.NewInt(1))
	}
	if !n.IsInt64() {
		return 0, fmt.Errorf("quantity %q: too large", q)
	}
	return n.Int64(), nil
}

// Millis returns q in thousandths, rounded up: "3500m" is 3500, "4" is
// 4000. CPU quantities are read with it.
func Millis(q string) (int64, error) { return parse(q, 1000) }

// Value returns q as a whole number, rounded up: "16Gi" is 17179869184,
// "110" is 110. Memory and counts are read with it.
func Value(q string) (int64, error) { return parse(q, 1) }

// FormatMillis writes thousandths as Kubernetes does: whole units without a
// suffix ("4"), others with m ("3500m").
func FormatMillis(millis int64) string {
	if millis%1000 == 0 {
		return strconv.FormatInt(millis/1000, 10)
	}
	return strconv.FormatInt(millis, 10) + "m"
}

// FormatBytes writes a byte count with the largest binary suffix that
// divides it exactly ("16Gi", "1536Mi"), or as a plain number.
func FormatBytes(n int64) string {
	for _, s := range []struct {
		suffix string
		shift  uint
	}{{"Ti", 40}, {"Gi", 30}, {"Mi", 20}, {"Ki", 10}} {
		if n != 0 && n%(1<<s.shift) == 0 {
			return strconv.FormatInt(n>>s.shift, 10) + s.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
