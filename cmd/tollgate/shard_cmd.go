package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/engine/live"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// shardOptions are run's flags for one shard of a sharded run.
type shardOptions struct {
	shard     string
	count     int
	startAt   string
	runID     string
	allPhases bool
}

func addShardFlags(fs *pflag.FlagSet, o *shardOptions) {
	fs.StringVar(&o.shard, "shard", "", "run shard `I/N` of a sharded run: this process's share of every load phase (merge the N reports with tollgate merge); "+
		"unset, $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) is the index when a count is given")
	fs.IntVar(&o.count, "shard-count", 0, "with $JOB_COMPLETION_INDEX: the number of shards `N` (else $TOLLGATE_SHARD_COUNT)")
	fs.StringVar(&o.startAt, "start-at", "", "sharded: begin the first load point's schedule at `TIME` (RFC 3339) on every shard; a shard that gets there late says so")
	fs.StringVar(&o.runID, "run-id", "", "sharded: the run this shard is part of, `ID`, the same on every shard (tollgate merge refuses shards of different runs); "+
		"unset, $TOLLGATE_RUN_ID (the Kubernetes recipe sets it to the Job's uid); the run is also known by its --start-at")
	fs.BoolVar(&o.allPhases, "shard-all-phases", false, "sharded: run the non-load phases (prefill, decode, prefix_cache, …) on every shard, not only shard 0")
}

// errShard is a --shard that does not name one shard of a run.
var errShard = errors.New("invalid shard")

// resolve returns the shard this process runs, nil when it is not sharded.
func (o *shardOptions) resolve(lookup func(string) (string, bool), stderr io.Writer) (*live.Shard, error) {
	var idx, n int
	switch {
	case o.shard != "":
		is, ns, ok := strings.Cut(o.shard, "/")
		i, err1 := strconv.Atoi(is)
		c, err2 := strconv.Atoi(ns)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: --shard %q: want INDEX/COUNT, e.g. 0/4", errShard, o.shard)
		}
		idx, n = i, c
	default:
		ji, ok := lookup("JOB_COMPLETION_INDEX")
		count := o.count
		if count == 0 {
			if v, ok := lookup("TOLLGATE_SHARD_COUNT"); ok && v != "" {
				c, err := strconv.Atoi(v)
				if err != nil {
					return nil, fmt.Errorf("%w: TOLLGATE_SHARD_COUNT=%q is not a number", errShard, v)
				}
				count = c
			}
		}
		if !ok || ji == "" {
			if count != 0 {
				return nil, fmt.Errorf("%w: a shard count (%d) but no index: give --shard I/N or set JOB_COMPLETION_INDEX", errShard, count)
			}
			if o.startAt != "" || o.allPhases || o.runID != "" {
				return nil, fmt.Errorf("%w: --start-at, --run-id and --shard-all-phases are for sharded runs: give --shard I/N", errShard)
			}
			return nil, nil
		}
		if count == 0 {
			fmt.Fprintf(stderr, "warning: JOB_COMPLETION_INDEX=%s is set but no shard count (--shard-count or TOLLGATE_SHARD_COUNT): not sharded\n", ji)
			return nil, nil
		}
		i, err := strconv.Atoi(ji)
		if err != nil {
			return nil, fmt.Errorf("%w: JOB_COMPLETION_INDEX=%q is not a number", errShard, ji)
		}
		idx, n = i, count
	}
	spec := fmt.Sprintf("%d/%d", idx, n)
	switch {
	case n < 1:
		return nil, fmt.Errorf("%w: shard %s: the count must be at least 1", errShard, spec)
	case idx < 0 || idx >= n:
		return nil, fmt.Errorf("%w: shard %s: the index must be 0 to %d", errShard, spec, n-1)
	}
	sh := &live.Shard{Index: idx, Count: n, AllPhases: o.allPhases, RunID: o.runID}
	if sh.RunID == "" {
		sh.RunID, _ = lookup("TOLLGATE_RUN_ID")
	}
	if err := checkRunID(sh.RunID); err != nil {
		return nil, err
	}
	if o.startAt != "" {
		t, err := time.Parse(time.RFC3339Nano, o.startAt)
		if err != nil {
			return nil, fmt.Errorf("%w: --start-at %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z: %w", errShard, o.startAt, err)
		}
		if err := checkStartAt(t, time.Now()); err != nil {
			return nil, fmt.Errorf("%w: --start-at %s: %w", errShard, o.startAt, err)
		}
		sh.StartAt = t
	}
	return sh, nil
}

// The window a --start-at must fall in, around the time the shard is
// started. Ahead: the recipes start shards one (Kubernetes) to five
// (GitHub) minutes ahead, and a start planned for tonight is hours ahead;
// a day covers any of them, and past it the time is a typo (another year,
// a date for a time zone off by a day) that would hold the runner,
// silently, until then. Behind: a shard that starts late begins at once
// and its lateness is measured (start_lateness_ms; a merge judges it
// against --max-start-lateness), but one already ten minutes late before
// it has loaded its scenario would send ten minutes of open-loop arrivals
// at once, which no merge could use; further back still, the time is
// stale (a Job re-applied with an old start) or mistyped.
const (
	maxStartAhead  = 24 * time.Hour
	maxStartBehind = 10 * time.Minute
)

// errStartAt is a --start-at outside the window around now.
var errStartAt = errors.New("start time out of range")

// checkStartAt refuses a start more than maxStartAhead after now or more
// than maxStartBehind before it.
func checkStartAt(at, now time.Time) error {
	now = now.Round(0) // the wall clock: a start time is one
	ahead := fmt.Sprintf("%g h", maxStartAhead.Hours())
	switch {
	case at.After(now.Add(maxStartAhead)):
		return fmt.Errorf("%w: more than %s after now (%s); the shards would wait until then. Give a start at most %s ahead, e.g. a minute from now", errStartAt, ahead, now.UTC().Format(time.RFC3339), ahead)
	case at.Before(now.Add(-maxStartBehind)):
		return fmt.Errorf("%w: more than %s before now (%s): a shard this late would send every arrival it missed at once. Give a start a little ahead of the slowest shard's start (and accept small lateness with merge --max-start-lateness)", errStartAt, fmt.Sprintf("%g min", maxStartBehind.Minutes()), now.UTC().Format(time.RFC3339))
	}
	return nil
}

// maxRunID bounds a run id: a Job's uid is 36 characters, a CI run's
// number and attempt fewer.
const maxRunID = 200

// checkRunID refuses a run id that could not name a run in a message.
func checkRunID(id string) error {
	if len(id) > maxRunID {
		return fmt.Errorf("%w: run id %.20q…: at most %d bytes", errShard, id, maxRunID)
	}
	for _, r := range id {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return fmt.Errorf("%w: run id %q: want printable characters without spaces, e.g. a Job's uid or $GITHUB_RUN_ID-$GITHUB_RUN_ATTEMPT", errShard, id)
		}
	}
	return nil
}

// checkShardable refuses what cannot be split over the shard's count.
func checkShardable(sc *scenarios.Scenario, sh *live.Shard, repeatRuns int) error {
	if repeatRuns > 1 {
		return fmt.Errorf("%w: --repeat-runs with --shard: repeat the sharded run instead", errShard)
	}
	if err := live.CheckShard(sc, sh.Count); err != nil {
		return fmt.Errorf("%w: %w", errShard, err)
	}
	return nil
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}
