// Reads a dcgm-exporter counters CSV exactly as dcgm-exporter does (NVIDIA/dcgm-exporter,
// internal/pkg/counters/counter_config.go: ReadCSVFile and the checks of ExtractCounters that
// need no GPU): encoding/csv with Comment '#', fields trimmed of spaces, exactly three fields
// per record, a Prometheus type dcgm-exporter knows. Exit 1 with its error text otherwise.
// With -records, each record as dcgm-exporter holds it is printed too, one JSON array a line.
package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// promMetricType in dcgm-exporter's internal/pkg/counters/variables.go
var promMetricType = map[string]bool{"gauge": true, "counter": true, "histogram": true, "summary": true, "label": true}

func main() {
	path, records := os.Args[1], false
	if path == "-records" {
		path, records = os.Args[2], true
	}
	file, err := os.Open(path)
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	defer file.Close()
	r := csv.NewReader(file)
	r.Comment = '#'
	all, err := r.ReadAll()
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	for i, record := range all {
		if len(record) == 0 {
			continue
		}
		for j, field := range record {
			record[j] = strings.Trim(field, " ")
		}
		if len(record) != 3 {
			fmt.Printf("malformed CSV record; err: failed to parse line %d (`%v`), expected 3 fields\n", i, record)
			os.Exit(1)
		}
		if !promMetricType[record[1]] {
			fmt.Printf("could not find Prometheus metric type '%s'\n", record[1])
			os.Exit(1)
		}
		if records {
			line, _ := json.Marshal(record)
			fmt.Println(string(line))
		}
	}
	fmt.Printf("%d counters\n", len(all))
}
