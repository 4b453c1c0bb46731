// What netdelay reads of Kafka's wire protocol: the TCP segment a packet carries, a request's header or a
// response's correlation id where a frame starts the segment, and whether an EndTxn commits.
package main

import (
	"encoding/binary"
	"fmt"
)

const (
	maxFrame     = 100 << 20 // a size above this is not the start of a frame
	maxAPIKey    = 127       // a key above this is not the start of a request
	maxVersion   = 63        // a version above this is not the start of a request
	maxClientID  = 200       // the bytes of a client id kept in a match
	requestFixed = 14        // a request header's size, API key, version, correlation id and client id length
	produceKey   = 0
	produceFlex  = 9  // the first Produce version with flexible encodings
	produceIDs   = 13 // the first Produce version that names a topic by its id
)

// header is a request's header (versions 1 and 2 read alike up to the client id), as a match records it.
type header struct {
	APIKey  int    `json:"api_key"`
	Version int    `json:"api_version"`
	Corr    int32  `json:"correlation_id"`
	Client  string `json:"client_id"`
	// a Produce request's first topic (its id, in hex, from version 13) and partition
	Topic     string `json:"topic,omitempty"`
	Partition *int32 `json:"partition,omitempty"`
}

// segment is one TCP packet seen from a listener: the client's end of the connection, whether the packet goes to
// the listener (a request) or from it (a response), and its data.
type segment struct {
	client   string
	toServer bool
	data     []byte
}

// tcpSegment reads a TCP packet to or from `port`, IPv4 or IPv6 without extension headers.
func tcpSegment(p []byte, port int) (segment, bool) {
	var src, dst, tcp []byte
	switch {
	case len(p) >= 20 && p[0]>>4 == 4 && p[9] == 6:
		ihl := int(p[0]&0x0f) * 4
		if len(p) < ihl+20 {
			return segment{}, false
		}
		src, dst, tcp = p[12:16], p[16:20], p[ihl:]
	case len(p) >= 60 && p[0]>>4 == 6 && p[6] == 6:
		src, dst, tcp = p[8:24], p[24:40], p[40:]
	default:
		return segment{}, false
	}
	off := int(tcp[12]>>4) * 4
	if off < 20 || len(tcp) < off {
		return segment{}, false
	}
	sport, dport := int(binary.BigEndian.Uint16(tcp[0:2])), int(binary.BigEndian.Uint16(tcp[2:4]))
	if port == 0 || dport == port {
		return segment{fmt.Sprintf("%x:%d", src, sport), true, tcp[off:]}, true
	}
	if sport == port {
		return segment{fmt.Sprintf("%x:%d", dst, dport), false, tcp[off:]}, true
	}
	return segment{}, false
}

// requestHeader reads the request header a segment starts with: its size (int32), API key and version (int16
// each), correlation id (int32) and client id (a nullable int16-sized string, cut to maxClientID bytes).
func requestHeader(data []byte) (header, bool) {
	if len(data) < requestFixed {
		return header{}, false
	}
	size := int32(binary.BigEndian.Uint32(data[:4]))
	key, version := int16(binary.BigEndian.Uint16(data[4:6])), int16(binary.BigEndian.Uint16(data[6:8]))
	n := int(int16(binary.BigEndian.Uint16(data[12:14])))
	if size < requestFixed-4 || size > maxFrame || key < 0 || key > maxAPIKey || version < 0 ||
		version > maxVersion || n < -1 || requestFixed-4+max(n, 0) > int(size) {
		return header{}, false
	}
	h := header{APIKey: int(key), Version: int(version), Corr: int32(binary.BigEndian.Uint32(data[8:12]))}
	if n > 0 {
		h.Client = string(data[requestFixed:min(len(data), requestFixed+min(n, maxClientID))])
	}
	if key == produceKey {
		h.Topic, h.Partition = produceTarget(data, requestFixed+max(n, 0), int(version))
	}
	return h, true
}

// produceTarget reads a Produce request's first topic and partition, its body starting at p (after the client id):
// the transactional id, acks, the timeout, then the topics. Nothing when the segment ends first.
func produceTarget(data []byte, p, version int) (string, *int32) {
	flexible := version >= produceFlex
	if flexible {
		p = skipTags(data, p) // the header's tagged fields, then -1 past data
	}
	if p = skipString(data, p, flexible, true); p < 0 {
		return "", nil
	}
	if p += 2 + 4; p >= len(data) { // acks, timeout
		return "", nil
	}
	if flexible { // the topics: a compact array, its length plus one
		n, size := binary.Uvarint(data[p:])
		if size <= 0 || n < 2 {
			return "", nil
		}
		p += size
	} else {
		if p+4 > len(data) || int32(binary.BigEndian.Uint32(data[p:p+4])) < 1 {
			return "", nil
		}
		p += 4
	}
	var topic string
	if version >= produceIDs {
		if p+16 > len(data) {
			return "", nil
		}
		topic, p = fmt.Sprintf("%x", data[p:p+16]), p+16
	} else {
		end := skipString(data, p, flexible, false)
		if end < 0 || end > len(data) {
			return "", nil
		}
		topic = string(data[end-stringLength(data, p, flexible) : end])
		p = end
	}
	if p >= len(data) {
		return topic, nil
	}
	if flexible { // the partitions: a compact array
		n, size := binary.Uvarint(data[p:])
		if size <= 0 || n < 2 {
			return topic, nil
		}
		p += size
	} else {
		p += 4
	}
	if p < 0 || p+4 > len(data) {
		return topic, nil
	}
	partition := int32(binary.BigEndian.Uint32(data[p : p+4]))
	return topic, &partition
}

// skipString is where a string starting at p ends (compact when flexible; nullable ones may be null); -1 if it
// runs past data.
func skipString(data []byte, p int, flexible, nullable bool) int {
	if p < 0 || p >= len(data) {
		return -1
	}
	n := stringLength(data, p, flexible)
	if n < 0 && !nullable {
		return -1
	}
	if flexible {
		_, size := binary.Uvarint(data[p:])
		p += size
	} else {
		p += 2
	}
	if end := p + max(n, 0); end <= len(data) {
		return end
	}
	return -1
}

// stringLength is the length of the string starting at p: int16 sized, or a compact varint of length plus one;
// -1 for null or unreadable.
func stringLength(data []byte, p int, flexible bool) int {
	if flexible {
		n, size := binary.Uvarint(data[p:])
		if size <= 0 || n > uint64(len(data)) {
			return -1
		}
		return int(n) - 1
	}
	if p+2 > len(data) {
		return -1
	}
	return int(int16(binary.BigEndian.Uint16(data[p : p+2])))
}

// responseCorrelation reads the correlation id of the response a segment starts with: its size, then the id.
func responseCorrelation(data []byte) (int32, bool) {
	if len(data) < 8 {
		return 0, false
	}
	size := int32(binary.BigEndian.Uint32(data[:4]))
	if size < 4 || size > maxFrame {
		return 0, false
	}
	return int32(binary.BigEndian.Uint32(data[4:8])), true
}

// endTxnCommits says whether data, the start of an EndTxn request, commits its transaction: its Committed field
// follows the header, the transactional id, the producer id and the epoch (flexible encodings from version 3 on).
func endTxnCommits(data []byte) bool {
	if len(data) < 14 {
		return false
	}
	flexible := binary.BigEndian.Uint16(data[6:8]) >= 3
	p := 14 + max(int(int16(binary.BigEndian.Uint16(data[12:14]))), 0) // the client id, a nullable string
	if flexible {
		p = skipTags(data, p)
	}
	if p < 0 || p+2 > len(data) {
		return false
	}
	if flexible { // a compact string: its length plus one, as an unsigned varint
		n, size := binary.Uvarint(data[p:])
		if size <= 0 || n == 0 || n > uint64(len(data)) {
			return false
		}
		p += size + int(n) - 1
	} else {
		p += 2 + int(int16(binary.BigEndian.Uint16(data[p:p+2])))
	}
	p += 8 + 2 // the producer id and epoch
	return p >= 0 && p < len(data) && data[p] == 1
}

// skipTags is where a flexible header's tagged fields, starting at p, end; -1 if they run past data.
func skipTags(data []byte, p int) int {
	if p >= len(data) {
		return -1
	}
	count, size := binary.Uvarint(data[p:])
	if size <= 0 {
		return -1
	}
	p += size
	for ; count > 0; count-- {
		for _, skip := range []bool{false, true} { // the tag, then the size of the data it skips
			if p >= len(data) {
				return -1
			}
			n, size := binary.Uvarint(data[p:])
			if size <= 0 || n > uint64(len(data)) {
				return -1
			}
			p += size
			if skip {
				p += int(n)
			}
		}
	}
	return p
}
