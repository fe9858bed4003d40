package frontdoor

// family is a series' name, meaning and label, with its values' reading
// of a Stats.
type family struct {
	name, help string
	counter    bool
	label      string
	values     []labelled
}

type labelled struct {
	value string
	n     func(*Stats) float64
}

func one(n func(*Stats) float64) []labelled { return []labelled{{"", n}} }

// families are the Door's series, in the order Series lists them.
var families = []family{
	{"geoidem_frontdoor_connections", "Connections by state: open, idle (waiting for a request), held (a request with its body whole), waiting (accepted, waiting for room).", false, "state", []labelled{
		{"open", func(s *Stats) float64 { return float64(s.Conns) }},
		{"idle", func(s *Stats) float64 { return float64(s.IdleConns) }},
		{"held", func(s *Stats) float64 { return float64(s.HeldConns) }},
		{"waiting", func(s *Stats) float64 { return float64(s.WaitingConns) }},
	}},
	{"geoidem_frontdoor_connections_closed_total", "Connections the front door refused at accept or closed, by reason: host (refused under contention, its host holding MaxConnsPerHost or more), idle (closed to make room under contention), busy (closed to make room under contention, its request's body still arriving), idle_bound (closed to keep to MaxIdle).", true, "reason", []labelled{
		{"host", func(s *Stats) float64 { return float64(s.ConnsRefused) }},
		{"idle", func(s *Stats) float64 { return float64(s.ConnsClosedIdle) }},
		{"busy", func(s *Stats) float64 { return float64(s.ConnsClosedBusy) }},
		{"idle_bound", func(s *Stats) float64 { return float64(s.ConnsEvicted) }},
	}},
	{"geoidem_frontdoor_connections_waited_total", "New connections that waited for room at MaxConns, none being closable for them.", true, "",
		one(func(s *Stats) float64 { return float64(s.ConnsWaited) })},
	{"geoidem_frontdoor_bodies_arriving", "Request bodies still arriving.", false, "",
		one(func(s *Stats) float64 { return float64(s.Arriving) })},
	{"geoidem_frontdoor_body_bytes", "Bytes charged to the request bodies arriving or in work.", false, "",
		one(func(s *Stats) float64 { return float64(s.Bytes) })},
	{"geoidem_frontdoor_bodies_cut_total", "Request bodies cut off (408), by reason: slow (fell behind the body rate), room (the slowest arriving body of a client with more arriving, cut off to make room for another client) or stalled (no progress for a second while the connections are crowded).", true, "reason", []labelled{
		{"slow", func(s *Stats) float64 { return float64(s.CutSlow) }},
		{"room", func(s *Stats) float64 { return float64(s.CutForRoom) }},
		{"stalled", func(s *Stats) float64 { return float64(s.CutStalled) }},
	}},
	{"geoidem_frontdoor_slots_held", "Work slots held: requests whose bodies have arrived and whose handlers run.", false, "",
		one(func(s *Stats) float64 { return float64(s.Slots) })},
	{"geoidem_frontdoor_known_slots_held", "Work slots held by known senders (a listed network, or a verified signature).", false, "",
		one(func(s *Stats) float64 { return float64(s.KnownSlots) })},
	{"geoidem_frontdoor_answers_writing", "Answers being written after their work slot was given back.", false, "",
		one(func(s *Stats) float64 { return float64(s.Answering) })},
	{"geoidem_frontdoor_refused_total", "Requests refused for want of room, by reason: server_busy (503) or client_busy (429, past the client's share).", true, "reason", []labelled{
		{"server_busy", func(s *Stats) float64 { return float64(s.RefusedBusy) }},
		{"client_busy", func(s *Stats) float64 { return float64(s.RefusedClient) }},
	}},
	{"geoidem_frontdoor_known_admitted_total", "Work slots given to known senders.", true, "",
		one(func(s *Stats) float64 { return float64(s.KnownAdmitted) })},
	{"geoidem_frontdoor_answers_cut_total", "Answers whose client read them slower than the minimum write rate: the connection was closed.", true, "",
		one(func(s *Stats) float64 { return float64(s.AnswersCut) })},
}

// Series calls f with each value of s as a metric, named and described
// here once for every exporter (observe/promobserve's and
// observe/otelobserve's FrontDoor, or Prometheus text written by hand):
// its name ("geoidem_frontdoor_refused_total"), its help (one sentence or
// a few), whether it is a counter (it only grows; else a gauge), the name
// of its one label ("reason", "state") and the label's value, both "" for
// a series without one, and its value. Every Stats calls f with the same
// series in the same order, at 0 before anything happened, so that an
// exporter describes them from (Stats{}).Series. The series of one name
// come together, each label value in turn, the names in this order:
//
//	geoidem_frontdoor_connections{state}                open, idle, held, waiting (gauge)
//	geoidem_frontdoor_connections_closed_total{reason}  host, idle, busy, idle_bound
//	geoidem_frontdoor_connections_waited_total
//	geoidem_frontdoor_bodies_arriving                   gauge
//	geoidem_frontdoor_body_bytes                        gauge
//	geoidem_frontdoor_bodies_cut_total{reason}          slow, room, stalled
//	geoidem_frontdoor_slots_held                        gauge
//	geoidem_frontdoor_known_slots_held                  gauge
//	geoidem_frontdoor_answers_writing                   gauge
//	geoidem_frontdoor_refused_total{reason}             server_busy, client_busy
//	geoidem_frontdoor_known_admitted_total
//	geoidem_frontdoor_answers_cut_total
func (s Stats) Series(f func(name, help string, counter bool, label, value string, n float64)) {
	for _, fam := range families {
		for _, v := range fam.values {
			f(fam.name, fam.help, fam.counter, fam.label, v.value, v.n(&s))
		}
	}
}
