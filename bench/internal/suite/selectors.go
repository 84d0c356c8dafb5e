package suite

import (
	"context"
	"fmt"

	"github.com/lockstep-dev/lockstep/bench/internal/results"
	"github.com/lockstep-dev/lockstep/framework/benchkit/selectrun"
)

// Selectors measures the selected watch: 5,000 watchers, each selecting
// its own node of a pod assignment topic of 500, 50,000 and 150,000 pods
// (30 per node at the largest), then 500 watchers over 15,000 (30 per
// node again), 100 changes/s with every tenth a rebind, and in each round
// the anchor, a topic with one watcher that selects nothing; last, 500
// watchers that all watch a whole topic of 500 pods, the cost without
// selectors. Cost should follow the watchers a change matches (one, or two
// for a rebind), not the watchers or the pods there are. Each size sets
// up its own server, pods and watchers, so the sizes run once per round;
// the anchor runs once per round too, first, its rounds alternating with
// the sizes' as every variant's do.
func (s *Suite) Selectors() error {
	type size struct {
		watchers, objects int
		unselected        bool // every watcher watches the whole topic: the cost without selectors
	}
	sizes := pick(s, []size{{5000, 500, false}, {5000, 50000, false}, {5000, 150000, false}, {500, 15000, false}, {500, 500, true}},
		[]size{{500, 5000, false}})
	changes := results.LengthsOf(s.cfg.Quick).SelectChanges
	anchor := selectrun.Config{Watchers: 1, Objects: 30, Unselected: true, Rate: 100, Changes: changes,
		RebindEvery: 10, MeasureIdle: true}
	for range s.cfg.Rounds {
		if err := s.selectRound(results.VSelectAnchor, anchor); err != nil {
			return err
		}
		for _, sz := range sizes {
			cfg := selectrun.Config{Watchers: sz.watchers, Objects: sz.objects, Unselected: sz.unselected, Rate: 100, Changes: changes,
				RebindEvery: 10, MeasureIdle: true}
			if err := s.selectRound(results.SelectVariant(sz.watchers, sz.objects, sz.unselected), cfg); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Suite) selectRound(variant string, cfg selectrun.Config) error {
	return s.round(results.WSelect, variant, func() (results.Round, error) {
		res, err := selectrun.Run(context.Background(), cfg)
		if err != nil {
			return results.Round{}, err
		}
		if res.Deliveries < res.Expected*9/10 {
			return results.Round{}, fmt.Errorf("%d of %d deliveries arrived", res.Deliveries, res.Expected)
		}
		ms := func(q float64) float64 { return float64(res.Percentile(q).Microseconds()) / 1000 }
		return results.Round{Latencies: res.Latencies, Metrics: map[string]float64{
			results.MSelCPU:       float64(res.CPUPerChange().Nanoseconds()) / 1000,
			results.MSelGrossCPU:  float64(res.GrossCPUPerChange().Nanoseconds()) / 1000,
			results.MSelP50:       ms(0.50),
			results.MSelP99:       ms(0.99),
			results.MSelSnapMin:   float64(res.SnapshotMin),
			results.MSelSnapMax:   float64(res.SnapshotMax),
			results.MSelPerChange: float64(res.Deliveries) / float64(cfg.Changes),
			results.MSelOutside:   float64(res.Outside),
			results.MSelSetup:     res.Setup.Seconds(),
		}}, nil
	})
}
