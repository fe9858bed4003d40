package promobserve

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoidem/geoidem/frontdoor"
)

// FrontDoor returns a collector of d's decisions and state, read from
// d.Stats at each scrape under the names and meanings frontdoor.Stats.Series
// gives them: the connections refused or closed by reason, the bodies cut
// off by reason, the requests refused, the work slots held and the rest.
// Register it beside the Observer:
//
//	reg.MustRegister(promobserve.FrontDoor(door))
func FrontDoor(d *frontdoor.Door) prometheus.Collector {
	c := &doorCollector{door: d, descs: map[string]*prometheus.Desc{}}
	(frontdoor.Stats{}).Series(func(name, help string, _ bool, label, _ string, _ float64) {
		if _, ok := c.descs[name]; ok {
			return
		}
		var labels []string
		if label != "" {
			labels = []string{label}
		}
		c.descs[name] = prometheus.NewDesc(name, help, labels, nil)
		c.order = append(c.order, name)
	})
	return c
}

// doorCollector is FrontDoor's collector.
type doorCollector struct {
	door  *frontdoor.Door
	descs map[string]*prometheus.Desc
	order []string
}

func (c *doorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, name := range c.order {
		ch <- c.descs[name]
	}
}

func (c *doorCollector) Collect(ch chan<- prometheus.Metric) {
	c.door.Stats().Series(func(name, _ string, counter bool, label, value string, n float64) {
		t := prometheus.GaugeValue
		if counter {
			t = prometheus.CounterValue
		}
		var labels []string
		if label != "" {
			labels = []string{value}
		}
		ch <- prometheus.MustNewConstMetric(c.descs[name], t, n, labels...)
	})
}
