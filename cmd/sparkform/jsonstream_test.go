package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdJSONStream is `jsonstream FILE REGEXP`: every line of FILE (a saved
// stdout) must be one JSON object of the machine-readable UI, with
// @level, @message, @module, an RFC 3339 @timestamp and type; the
// sequence of types, joined by spaces, must match REGEXP (anchored). It
// also checks that every apply_start is followed by exactly one
// apply_complete or apply_errored of the same address, with any
// apply_progress of it in between.
func cmdJSONStream(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: jsonstream FILE REGEXP")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	var types []string
	open := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	n := 0
	for sc.Scan() {
		n++
		var msg map[string]any
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.UseNumber()
		if err := dec.Decode(&msg); err != nil || dec.More() {
			ts.Fatalf("%s:%d is not one JSON object (%v): %q", args[0], n, err, sc.Text())
		}
		for _, k := range []string{"@level", "@message", "@module", "@timestamp", "type"} {
			if s, ok := msg[k].(string); !ok || s == "" {
				ts.Fatalf("%s:%d has no %s: %s", args[0], n, k, sc.Text())
			}
		}
		if _, err := time.Parse(time.RFC3339Nano, msg["@timestamp"].(string)); err != nil {
			ts.Fatalf("%s:%d: @timestamp: %v", args[0], n, err)
		}
		typ := msg["type"].(string)
		types = append(types, typ)
		switch typ {
		case "apply_start", "apply_progress", "apply_complete", "apply_errored":
			hook, _ := msg["hook"].(map[string]any)
			res, _ := hook["resource"].(map[string]any)
			addr, _ := res["addr"].(string)
			if addr == "" {
				ts.Fatalf("%s:%d: %s without hook.resource.addr", args[0], n, typ)
			}
			switch typ {
			case "apply_start":
				if open[addr] {
					ts.Fatalf("%s:%d: second apply_start of %s", args[0], n, addr)
				}
				open[addr] = true
			case "apply_progress":
				if !open[addr] {
					ts.Fatalf("%s:%d: apply_progress of %s outside its start and end", args[0], n, addr)
				}
			default:
				if !open[addr] {
					ts.Fatalf("%s:%d: %s of %s without apply_start", args[0], n, typ, addr)
				}
				delete(open, addr)
			}
		case "diagnostic":
			d, _ := msg["diagnostic"].(map[string]any)
			if d["severity"] == nil || d["summary"] == nil {
				ts.Fatalf("%s:%d: diagnostic without severity or summary", args[0], n)
			}
		}
	}
	ts.Check(sc.Err())
	if len(open) > 0 {
		ts.Fatalf("%s: operations started and never ended: %v", args[0], open)
	}
	seq := strings.Join(types, " ")
	re, err := regexp.Compile("^(?:" + args[1] + ")$")
	ts.Check(err)
	if re.MatchString(seq) == neg {
		ts.Fatalf("%s: message types %q; want a match of %q", args[0], seq, args[1])
	}
}

// cmdEnvMatch is `envmatch NAME FILE REGEXP`: set NAME to the first
// submatch of REGEXP in FILE (e.g. the lock id an error printed).
func cmdEnvMatch(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: envmatch NAME FILE REGEXP")
	}
	data, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	m := regexp.MustCompile(args[2]).FindSubmatch(data)
	if len(m) < 2 {
		ts.Fatalf("envmatch: no match of %q in %s:\n%s", args[2], args[1], data)
	}
	ts.Setenv(args[0], string(m[1]))
}
