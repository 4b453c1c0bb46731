// How netdelay finds the error codes in a Kafka response: it walks the response's message schema, the JSON that
// the broker's own kafka-clients jar carries (common/message/*Response.json), for the version of the request
// answered, and notes where each ErrorCode field sits.
package main

import (
	"archive/zip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// field is one field of a message schema, as Kafka's generator reads it.
type field struct {
	Name             string  `json:"name"`
	Type             string  `json:"type"`
	Versions         string  `json:"versions"`
	TaggedVersions   string  `json:"taggedVersions"`
	FlexibleVersions string  `json:"flexibleVersions"`
	Fields           []field `json:"fields"`
}

// schema is one response's message schema.
type schema struct {
	APIKey           int     `json:"apiKey"`
	Type             string  `json:"type"`
	ValidVersions    string  `json:"validVersions"`
	FlexibleVersions string  `json:"flexibleVersions"`
	Fields           []field `json:"fields"`
	CommonStructs    []field `json:"commonStructs"`
}

// apiVersionsKey is the one API whose responses keep header version 0 in every version.
const apiVersionsKey = 18

// loadSchemas reads the response schemas of a kafka-clients jar, by API key.
func loadSchemas(jar string) (map[int]*schema, error) {
	r, err := zip.OpenReader(jar)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out := map[int]*schema{}
	for _, f := range r.File {
		if !strings.HasPrefix(f.Name, "common/message/") || !strings.HasSuffix(f.Name, "Response.json") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
		s, err := parseSchema(body)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", f.Name, err)
		}
		if s.Type == "response" {
			out[s.APIKey] = s
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no response schemas (common/message/*Response.json)", jar)
	}
	return out, nil
}

// parseSchema reads a schema file, whose lines starting with // are comments.
func parseSchema(body []byte) (*schema, error) {
	var kept []string
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "//") {
			kept = append(kept, line)
		}
	}
	s := &schema{}
	return s, json.Unmarshal([]byte(strings.Join(kept, "\n")), s)
}

// inVersions says whether version v lies in a schema's range: "3+", "1-5", "7", or "none" and "" for none.
func inVersions(r string, v int) bool {
	if r == "" || r == "none" {
		return false
	}
	if lo, ok := strings.CutSuffix(r, "+"); ok {
		n, err := strconv.Atoi(lo)
		return err == nil && v >= n
	}
	lo, hi, found := strings.Cut(r, "-")
	if !found {
		hi = lo
	}
	a, errA := strconv.Atoi(lo)
	b, errB := strconv.Atoi(hi)
	return errA == nil && errB == nil && v >= a && v <= b
}

// sizes are the bytes of each fixed-size type.
var sizes = map[string]int{"bool": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8,
	"float64": 8, "uuid": 16}

// walk reads a response body by its schema, noting where each ErrorCode sits.
type walk struct {
	data     []byte
	p        int
	version  int
	flexible bool
	structs  map[string][]field
	codes    []int // the offsets of the ErrorCode fields read so far
}

// errorCodes are the offsets in data, a response frame to a request of `version`, of its ErrorCode fields, up to
// where data ends (a frame longer than its segment is read as far as the segment goes).
func errorCodes(s *schema, version int, data []byte) []int {
	w := &walk{data: data, p: 8, version: version, flexible: inVersions(s.FlexibleVersions, version),
		structs: map[string][]field{}}
	for _, c := range s.CommonStructs {
		w.structs[c.Name] = c.Fields
	}
	if !w.flexible || s.APIKey == apiVersionsKey || w.tags() { // the response header's tagged fields
		w.fields(s.Fields)
	}
	return w.codes
}

// fields reads a struct's fields of the walk's version, then in flexible versions its tagged fields; false once
// data ends.
func (w *walk) fields(fs []field) bool {
	for _, f := range fs {
		if !inVersions(f.Versions, w.version) || inVersions(f.TaggedVersions, w.version) {
			continue
		}
		if !w.field(f) {
			return false
		}
	}
	return !w.flexible || w.tags()
}

func (w *walk) field(f field) bool {
	flexible := w.flexible && (f.FlexibleVersions == "" || inVersions(f.FlexibleVersions, w.version))
	if elem, ok := strings.CutPrefix(f.Type, "[]"); ok {
		n, ok := w.length(flexible, 4)
		for ; ok && n > 0; n-- {
			ok = w.value(elem, f.Fields, flexible)
		}
		return ok
	}
	if f.Name == "ErrorCode" && f.Type == "int16" && w.p+2 <= len(w.data) {
		w.codes = append(w.codes, w.p)
	}
	return w.value(f.Type, f.Fields, flexible)
}

// value reads one value of a type: a primitive, or a struct given inline or by a common struct's name.
func (w *walk) value(t string, inline []field, flexible bool) bool {
	switch {
	case sizes[t] > 0:
		w.p += sizes[t]
	case t == "string":
		n, ok := w.length(flexible, 2)
		if !ok {
			return false
		}
		w.p += n
	case t == "bytes" || t == "records":
		n, ok := w.length(flexible, 4)
		if !ok {
			return false
		}
		w.p += n
	case inline != nil:
		return w.fields(inline)
	default:
		fs, ok := w.structs[t]
		return ok && w.fields(fs)
	}
	return w.p <= len(w.data)
}

// length reads a length or count: an unsigned varint of it plus one when flexible, else a signed int of `width`
// bytes; null (-1) reads as 0.
func (w *walk) length(flexible bool, width int) (int, bool) {
	if w.p < 0 || w.p >= len(w.data) {
		return 0, false
	}
	if flexible {
		n, size := binary.Uvarint(w.data[w.p:])
		if size <= 0 || n > uint64(len(w.data)) {
			return 0, false
		}
		w.p += size
		return max(int(n)-1, 0), true
	}
	if w.p+width > len(w.data) {
		return 0, false
	}
	var n int
	if width == 2 {
		n = int(int16(binary.BigEndian.Uint16(w.data[w.p:])))
	} else {
		n = int(int32(binary.BigEndian.Uint32(w.data[w.p:])))
	}
	w.p += width
	if n > len(w.data) {
		return 0, false
	}
	return max(n, 0), true
}

// tags skips a tagged-field buffer.
func (w *walk) tags() bool {
	w.p = skipTags(w.data, w.p)
	return w.p >= 0 && w.p <= len(w.data)
}
