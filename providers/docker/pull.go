package docker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/sparkform/sparkform/providers/sdk"
)

// progressEvery is how often pull and wait report while nothing else does.
const progressEvery = 250 * time.Millisecond

// layerProgress tracks one layer of a pull.
type layerProgress struct {
	status         string
	current, total int64
}

// pull pulls ref on the node, reporting per-layer bytes as they arrive.
func pull(ctx context.Context, d *dockerClient, ref string, progress func(sdk.Progress)) error {
	start := time.Now()
	progress(sdk.Progress{Message: fmt.Sprintf("pulling %s on %s", ref, d.node.Name)})
	resp, err := d.api.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		return fmt.Errorf("pull %s: %w", ref, err)
	}
	defer resp.Close()
	layers := map[string]*layerProgress{}
	var last time.Time
	report := func(force bool) {
		if !force && time.Since(last) < progressEvery {
			return
		}
		last = time.Now()
		var cur, tot int64
		done := 0
		for _, l := range layers {
			cur += l.current
			tot += l.total
			if l.status == "Pull complete" || l.status == "Already exists" {
				done++
			}
		}
		// Sizes and rates are the UI's to show (Current and Total are
		// bytes): the message stays short enough for one terminal line.
		msg := fmt.Sprintf("pulling %s: %d/%d layers", ref, done, len(layers))
		progress(sdk.Progress{Message: msg, Current: cur, Total: tot, Unit: sdk.UnitBytes, Elapsed: time.Since(start)})
	}
	for m, err := range resp.JSONMessages(ctx) {
		if err != nil {
			return fmt.Errorf("pull %s: %w", ref, err)
		}
		if m.Error != nil {
			return fmt.Errorf("pull %s: %s", ref, m.Error.Message)
		}
		if m.ID == "" || m.Progress == nil && m.Status == "" {
			continue
		}
		if strings.HasPrefix(m.Status, "Pulling from") || strings.HasPrefix(m.Status, "Digest:") || strings.HasPrefix(m.Status, "Status:") {
			continue
		}
		l := layers[m.ID]
		if l == nil {
			l = &layerProgress{}
			layers[m.ID] = l
		}
		l.status = m.Status
		switch m.Status {
		case "Downloading":
			if m.Progress != nil {
				l.current, l.total = m.Progress.Current, m.Progress.Total
			}
		case "Download complete", "Verifying Checksum", "Extracting", "Pull complete":
			if l.total > 0 {
				l.current = l.total
			}
		}
		report(m.Status == "Pull complete")
	}
	report(true)
	return nil
}
