package main

import (
	"fmt"
	"io"

	"github.com/readside/readside/httpapi"
)

// printDegraded lists the projections that stopped alone or dead-letter
// every record, each with its reason and its fix.
func printDegraded(w io.Writer, ds []httpapi.Degradation) {
	for _, d := range ds {
		fmt.Fprintln(w, "  "+wrap(fmt.Sprintf("%s %s: %s", d.Projection, stateWord(d.State), d.Reason), helpWidth-2, "\n    "))
		fmt.Fprintln(w, "    "+wrap("fix: "+d.Fix, helpWidth-4, "\n      "))
	}
}

func stateWord(state string) string {
	if state == "dead-lettering" {
		return "DEAD-LETTERS EVERY ROW"
	}
	return "STOPPED"
}
