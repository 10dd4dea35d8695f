// Command startup measures tollgate's start-up CPU time (user + system,
// every thread) for three commands, with each build given in turn:
//
//	version                          the process alone
//	validate examples/quickstart.yaml  load, schema-validate, compile gates
//	run (up to the first request)    everything a run does before it sends
//
// The last is read when the first request (the target's readiness probe)
// reaches the bench's own server: the sum of /proc/PID/task/*/schedstat
// (nanoseconds on CPU) at that moment; then the process is killed. Linux
// only. Runs are interleaved (A B, B A, …) and medians printed, with the
// load average at the start and the end.
//
//	go build -o /tmp/tg ./cmd/tollgate && go run ./bench/startup -n 20 /tmp/tg-old /tmp/tg
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/bench/internal/rounds"
)

func main() {
	n := flag.Int("n", 15, "runs of each command for each build")
	flag.Parse()
	builds := flag.Args()
	if len(builds) == 0 {
		fmt.Fprintln(os.Stderr, "usage: go run ./bench/startup [-n RUNS] TOLLGATE...")
		os.Exit(2)
	}
	repo, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	scenario := filepath.Join(repo, "bench/startup/first-request.yaml")
	quick := filepath.Join(repo, "examples/quickstart.yaml")
	fmt.Println("load average at the start:", rounds.LoadAvg())
	type key struct{ build, cmd string }
	ms := map[key][]float64{}
	cmds := []string{"version", "validate", "run to 1st request"}
	for i := 0; i < *n; i++ {
		// Each round starts with the next build, so that none is always first.
		for j := range builds {
			b := builds[(i+j)%len(builds)]
			ms[key{b, cmds[0]}] = append(ms[key{b, cmds[0]}], cpuOf(b, "version"))
			ms[key{b, cmds[1]}] = append(ms[key{b, cmds[1]}], cpuOf(b, "validate", quick))
			ms[key{b, cmds[2]}] = append(ms[key{b, cmds[2]}], untilFirstRequest(b, scenario))
		}
	}
	fmt.Println("load average at the end:  ", rounds.LoadAvg())
	fmt.Printf("CPU ms, median of %d (min–max)\n", *n)
	fmt.Printf("%-22s", "")
	for _, c := range cmds {
		fmt.Printf("%24s", c)
	}
	fmt.Println()
	for _, b := range builds {
		fmt.Printf("%-22s", b)
		for _, c := range cmds {
			v := ms[key{b, c}]
			slices.Sort(v)
			fmt.Printf("%24s", fmt.Sprintf("%.1f (%.1f–%.1f)", v[len(v)/2], v[0], v[len(v)-1]))
		}
		fmt.Println()
	}
}

// cpuOf runs a command to its end and returns its user + system CPU in ms.
func cpuOf(bin string, args ...string) float64 {
	cmd := exec.Command(bin, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "%s %v: %v\n%s", bin, args, err, out)
		os.Exit(1)
	}
	st := cmd.ProcessState
	return float64(st.UserTime()+st.SystemTime()) / float64(time.Millisecond)
}

// untilFirstRequest runs scenario against a server of its own and returns
// the CPU ms the process had used when the first request arrived.
func untilFirstRequest(bin, scenario string) float64 {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	cmd := exec.Command(bin, "run", "-q", scenario)
	cmd.Env = append(os.Environ(), "TOLLGATE_STARTUP_URL=http://"+ln.Addr().String())
	got := make(chan float64, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- taskCPU(cmd.Process.Pid):
		default:
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	select {
	case v := <-got:
		return v
	case <-time.After(20 * time.Second):
		fmt.Fprintf(os.Stderr, "%s run %s: no request in 20 s\n", bin, scenario)
		os.Exit(1)
	}
	return 0
}

// taskCPU sums the time on CPU of every thread of pid, in ms.
func taskCPU(pid int) float64 {
	dirs, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(dirs) == 0 {
		panic(fmt.Sprintf("schedstat of %d: %v", pid, err))
	}
	var ns int64
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		v, _ := strconv.ParseInt(f[0], 10, 64)
		ns += v
	}
	return float64(ns) / 1e6
}
