// Which packets a hold takes: every one, or on a listener those of the direction it holds, from a connection's
// first request (or response to a request) of the gate's API key on; and what it records of the frames it held.
package main

import (
	"strconv"
	"strings"
	"time"
)

const (
	maxExamples = 20   // the last matches kept whole in the stats; all are counted
	maxPending  = 1024 // requests awaiting their response on one connection before the oldest are forgotten
)

// match is one held frame: its number among them, its request's header, which way it went, and how long its first
// packet was held.
type match struct {
	N uint64 `json:"n"`
	header
	Response bool    `json:"response"`
	HeldMs   float64 `json:"held_ms"`
	Codes    int     `json:"codes,omitempty"` // -error: the ErrorCode fields it set
}

// holds says whether a packet waits, of which gated connection it is ("" when no connection hold applies), and
// the frame it starts, if netdelay can name it.
func (d *delayer) holds(packet []byte, now time.Time) (string, *match, bool) {
	if d.port == 0 && d.gate < 0 {
		return "", nil, true
	}
	s, ok := tcpSegment(packet, d.port)
	if !ok {
		return "", nil, d.gate < 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.noted(s) {
		return "", nil, false
	}
	m := d.frame(s)
	if d.gate < 0 {
		return s.client, m, true
	}
	if until, held := d.held[s.client]; held && now.Before(until) {
		return s.client, m, true
	}
	delete(d.held, s.client)
	if m != nil && d.selects(m) && (!d.commits || endTxnCommits(s.data)) {
		d.stats.Gated++
		return s.client, m, true
	}
	return "", nil, false
}

// selects says whether a frame is one the gate takes: of its API key, from a client it names.
func (d *delayer) selects(m *match) bool {
	return m.APIKey == d.gate && strings.HasPrefix(m.Client, d.client)
}

// frame names the frame a segment of the held direction starts: a request by its header, a response by the
// request of its correlation id on that connection.
func (d *delayer) frame(s segment) *match {
	if s.toServer {
		if h, ok := d.request(s.data); ok {
			return &match{header: h}
		}
		return nil
	}
	corr, ok := responseCorrelation(s.data)
	if !ok {
		return nil
	}
	h, ok := d.pending[s.client][corr]
	if !ok {
		return nil
	}
	delete(d.pending[s.client], corr)
	return &match{header: h, Response: true}
}

// noted notes a request on a hold of responses, so that its answer can be named; it says whether `s` was one.
func (d *delayer) noted(s segment) bool {
	if !s.toServer || !d.responses {
		return false
	}
	if h, ok := d.request(s.data); ok {
		d.note(s.client, h)
	}
	return true
}

// note keeps a request's header until its response comes.
func (d *delayer) note(client string, h header) {
	waiting := d.pending[client]
	if waiting == nil || len(waiting) >= maxPending {
		waiting = map[int32]header{}
		d.pending[client] = waiting
	}
	waiting[h.Corr] = h
}

// record counts a held frame once its first packet has gone through, numbers it, and keeps the last maxExamples
// whole (a reader takes those numbered past the count it read before).
func (d *delayer) record(m *match, held float64) {
	if d.stats.Matched == nil {
		d.stats.Matched = map[string]uint64{}
	}
	d.stats.Matched[strconv.Itoa(m.APIKey)]++
	d.seen++
	m.N, m.HeldMs = d.seen, held
	d.stats.Examples = append(d.stats.Examples, *m)
	if len(d.stats.Examples) > maxExamples {
		d.stats.Examples = d.stats.Examples[1:]
	}
}
