package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/internal/redact"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/remotewrite"
)

// The environment variables that hold what a remote-write receiver wants
// besides the URL: never flags, so no credential sits in a shell history or
// a process list.
const (
	envRemoteWriteHeaders  = "TOLLGATE_REMOTE_WRITE_HEADERS"
	envRemoteWriteUsername = "TOLLGATE_REMOTE_WRITE_USERNAME"
	envRemoteWritePassword = "TOLLGATE_REMOTE_WRITE_PASSWORD"
)

// remoteWriteOptions are --remote-write, --label and --remote-write-timeout.
type remoteWriteOptions struct {
	url     string
	labels  []string
	timeout time.Duration

	// Set by resolve when a URL was given.
	client *remotewrite.Client
	user   []remotewrite.Label
}

func addRemoteWriteFlags(fs *pflag.FlagSet) *remoteWriteOptions {
	o := &remoteWriteOptions{}
	fs.StringVar(&o.url, "remote-write", "", "push the report's figures, gate verdicts and capacity to a Prometheus remote-write `URL` (protocol 1.0) once the outputs are written; "+
		"headers from $"+envRemoteWriteHeaders+" (name=value,…), basic auth from $"+envRemoteWriteUsername+" and $"+envRemoteWritePassword+"; a failed push exits 3 (1 when a gate failed) and loses nothing else")
	fs.StringArrayVar(&o.labels, "label", nil, "add `NAME=VALUE` to every --remote-write series (repeatable), e.g. --label branch=main")
	fs.DurationVar(&o.timeout, "remote-write-timeout", remotewrite.DefaultTimeout, "give up a --remote-write push after `DURATION`, its retries included")
	return o
}

// resolve checks the flags and the environment before anything is sent:
// each problem is an invalid invocation.
func (o *remoteWriteOptions) resolve(fs *pflag.FlagSet, lookupEnv func(string) (string, bool)) error {
	if o.url == "" {
		if fs.Changed("remote-write") {
			return invalid(errors.New("--remote-write: an empty URL"))
		}
		for _, f := range []string{"label", "remote-write-timeout"} {
			if fs.Changed(f) {
				return invalid(fmt.Errorf("--%s is for --remote-write: give --remote-write URL too", f))
			}
		}
		return nil
	}
	if o.timeout <= 0 {
		return invalid(fmt.Errorf("--remote-write-timeout %s: want a duration above 0, e.g. 10s", o.timeout))
	}
	user, err := remotewrite.ParseLabels(o.labels)
	if err != nil {
		return invalid(fmt.Errorf("--label: %w", err))
	}
	c := &remotewrite.Client{URL: o.url, Timeout: o.timeout, UserAgent: "tollgate/" + toolVersion()}
	if h, ok := lookupEnv(envRemoteWriteHeaders); ok {
		if c.Header, err = remotewrite.ParseHeaders(h); err != nil {
			return invalid(fmt.Errorf("$%s: %w", envRemoteWriteHeaders, err))
		}
	}
	c.Username, _ = lookupEnv(envRemoteWriteUsername)
	c.Password, _ = lookupEnv(envRemoteWritePassword)
	if err := c.Check(); err != nil {
		return invalid(fmt.Errorf("--remote-write: %w (credentials come from $%s, $%s and $%s)", err, envRemoteWriteHeaders, envRemoteWriteUsername, envRemoteWritePassword))
	}
	o.client, o.user = c, user
	return nil
}

// push sends rep's series, when --remote-write was given, and says so on
// wrote. The error (an output that could not be written) says that
// nothing else was lost.
func (o *remoteWriteOptions) push(ctx context.Context, rep *report.Report, wrote io.Writer) error {
	if o.client == nil {
		return nil
	}
	req, err := remotewrite.Build(rep, o.user)
	if err == nil {
		err = o.client.Push(ctx, req)
	}
	if err != nil {
		// Push's error shows no secret; Build's holds none.
		return fmt.Errorf("--remote-write: %w\n(the series were not written; every other output was, and the verdict is the gates')", err)
	}
	fmt.Fprintf(wrote, "pushed %d series to %s (remote-write)\n", len(req.Timeseries), redact.URL(o.client.URL))
	return nil
}

// skipped is why an interrupted command pushes nothing; nil without
// --remote-write.
func (o *remoteWriteOptions) skipped() error {
	if o.client == nil {
		return nil
	}
	return errors.New("--remote-write: not pushed: the run was interrupted, and a partial report's figures would read as a whole run's")
}
