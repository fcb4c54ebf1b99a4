// Command quantity-golden prints what apimachinery's resource.ParseQuantity makes of each input, so
// pyscheduler's quantity parser can be checked against upstream's own code (tests/unit/quantity_golden.jsonl).
//
// Input: one JSON string per line on stdin. Output: one JSON object per line on stdout, either
// {"in": s, "err": "..."} or {"in": s, "value": Value(), "milli": MilliValue()}. String() is left out:
// for "1e10000000" it formats ten million digits, which takes Go minutes.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/api/resource"
)

type row struct {
	In    string  `json:"in"`
	Err   *string `json:"err,omitempty"`
	Value *int64  `json:"value,omitempty"`
	Milli *int64  `json:"milli,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for in.Scan() {
		var s string
		if err := json.Unmarshal(in.Bytes(), &s); err != nil {
			fmt.Fprintf(os.Stderr, "bad input line %q: %v\n", in.Text(), err)
			os.Exit(2)
		}
		r := row{In: s}
		q, err := resource.ParseQuantity(s)
		if err != nil {
			msg := err.Error()
			r.Err = &msg
		} else {
			v, m := q.Value(), q.MilliValue()
			r.Value, r.Milli = &v, &m
		}
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
