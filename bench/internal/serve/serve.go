// Package serve runs `tollgate serve` in its own process for the benchmarks
// under bench/, so each measures a server it does not share a process with.
package serve

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// Server is a running `tollgate serve`.
type Server struct {
	URL  string
	PID  int
	cmd  *exec.Cmd
	once sync.Once
}

// Start starts bin's `serve` on a free loopback port with args and returns
// once it has printed its URL.
func Start(bin string, args ...string) (*Server, error) {
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	i := strings.Index(line, "http://")
	if err == nil && i < 0 {
		err = errors.New("no URL")
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("serve printed %q: %w", line, err)
	}
	// Drained so a server that writes more never blocks on a full pipe.
	go func() { _, _ = r.WriteTo(io.Discard) }()
	return &Server{URL: strings.Fields(line[i:])[0], PID: cmd.Process.Pid, cmd: cmd}, nil
}

// Stop interrupts the server and waits for it (it flushes its request log
// on the way out); later calls do nothing.
func (s *Server) Stop() {
	s.once.Do(func() {
		_ = s.cmd.Process.Signal(os.Interrupt)
		_ = s.cmd.Wait()
	})
}
