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
	for _, s := range (frontdoor.Stats{}).Series() {
		if _, ok := c.descs[s.Name]; ok {
			continue
		}
		var labels []string
		if s.Label != "" {
			labels = []string{s.Label}
		}
		c.descs[s.Name] = prometheus.NewDesc(s.Name, s.Help, labels, nil)
		c.order = append(c.order, s.Name)
	}
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
	for _, s := range c.door.Stats().Series() {
		t := prometheus.GaugeValue
		if s.Counter {
			t = prometheus.CounterValue
		}
		var labels []string
		if s.Label != "" {
			labels = []string{s.Value}
		}
		ch <- prometheus.MustNewConstMetric(c.descs[s.Name], t, s.N, labels...)
	}
}
