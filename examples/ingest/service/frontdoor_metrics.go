package service

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoidem/geoidem/frontdoor"
)

// doorCollector exports a front door's decisions (frontdoor.Door.Stats) as
// Prometheus metrics, read at each scrape.
type doorCollector struct{ door *frontdoor.Door }

var (
	doorCut = prometheus.NewDesc("geoidem_frontdoor_bodies_cut_total",
		"Request bodies cut off (408), by reason: slow (fell behind the body rate), room (the slowest arriving body of a client with more arriving, cut off to make room for another client) or stalled (no progress for a second while the connections are crowded).", []string{"reason"}, nil)
	doorSlots = prometheus.NewDesc("geoidem_frontdoor_slots_held",
		"Work slots held: requests whose bodies have arrived and whose handlers run.", nil, nil)
	doorKnownSlots = prometheus.NewDesc("geoidem_frontdoor_known_slots_held",
		"Work slots held by known senders (a listed network, or a verified signature).", nil, nil)
	doorArriving = prometheus.NewDesc("geoidem_frontdoor_bodies_arriving",
		"Request bodies still arriving.", nil, nil)
	doorBytes = prometheus.NewDesc("geoidem_frontdoor_body_bytes",
		"Bytes charged to the request bodies arriving or in work.", nil, nil)
	doorAnswering = prometheus.NewDesc("geoidem_frontdoor_answers_writing",
		"Answers being written after their work slot was given back.", nil, nil)
	doorRefused = prometheus.NewDesc("geoidem_frontdoor_refused_total",
		"Requests refused for want of room, by reason: server_busy (503) or client_busy (429, past the client's share).", []string{"reason"}, nil)
	doorKnown = prometheus.NewDesc("geoidem_frontdoor_known_admitted_total",
		"Work slots given to known senders.", nil, nil)
	doorAnswersCut = prometheus.NewDesc("geoidem_frontdoor_answers_cut_total",
		"Answers whose client read them slower than the minimum write rate: the connection was closed.", nil, nil)
)

func (c doorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{doorCut, doorSlots, doorKnownSlots, doorArriving, doorBytes, doorAnswering, doorRefused, doorKnown, doorAnswersCut} {
		ch <- d
	}
}

func (c doorCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.door.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter(doorCut, s.CutSlow, "slow")
	counter(doorCut, s.CutForRoom, "room")
	counter(doorCut, s.CutStalled, "stalled")
	gauge(doorSlots, float64(s.Slots))
	gauge(doorKnownSlots, float64(s.KnownSlots))
	gauge(doorArriving, float64(s.Arriving))
	gauge(doorBytes, float64(s.Bytes))
	gauge(doorAnswering, float64(s.Answering))
	counter(doorRefused, s.RefusedBusy, "server_busy")
	counter(doorRefused, s.RefusedClient, "client_busy")
	counter(doorKnown, s.KnownAdmitted)
	counter(doorAnswersCut, s.AnswersCut)
}
