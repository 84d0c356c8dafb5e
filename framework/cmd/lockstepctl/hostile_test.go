package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// What a hostile server puts in the strings it sends: a clipboard write
// (OSC 52), a title change, colours by C1 CSI, a cursor move and a line
// erase, a bidirectional override, a zero-width space, a forged line, a
// tab that would break a table, DEL.
const (
	oscClipboard = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
	hostileName  = "nc" + oscClipboard + "\x1b]0;owned\x07\u009b31m\x1b[2K\x1b[1A\u202eevil\u200b\U000E0001\nFORGED LINE\tx\x7f"
)

// assertTerminalSafe fails when out holds anything a terminal acts on.
func assertTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	require.True(t, utf8.ValidString(out), "%s is not UTF-8", what)
	for i, r := range out {
		if !safeRune(r) {
			t.Fatalf("%s holds %U at byte %d: %q", what, r, i, out)
		}
	}
	assert.NotContains(t, out, "\nFORGED LINE", "%s: a server's value started a line of its own", what)
}

// hostileStatus is a status JSON whose every string a server chooses is
// hostile.
func hostileStatus(extra func(map[string]any)) []byte {
	st := map[string]any{
		"component": hostileName, "instance": hostileName, "release": hostileName, "ready": false, "notReady": hostileName,
		"now":       time.Now().Format(time.RFC3339),
		"contracts": map[string][]string{hostileName: {hostileName}},
		"served":    []map[string]any{{"contract": hostileName, "version": hostileName, "fingerprint": hostileName, "client": hostileName}},
		"sessions": []map[string]any{{"peer": map[string]any{"component": hostileName, "instance": hostileName, "release": hostileName},
			"identity": hostileName, "contract": hostileName, "version": hostileName, "state": hostileName}},
		"topics": []map[string]any{{"contract": hostileName, "version": hostileName, "topic": hostileName,
			"watchers": []map[string]any{{"peer": map[string]any{"component": hostileName}, "selection": hostileName}}}},
		"clients": []map[string]any{{"contract": hostileName, "version": hostileName, "server": hostileName,
			"endpoints": []map[string]any{{"url": hostileName, "state": hostileName, "version": hostileName}}}},
	}
	if extra != nil {
		extra(st)
	}
	b, err := json.Marshal(st)
	if err != nil {
		panic(err)
	}
	return b
}

// hostile starts a server on 127.0.0.1 that answers every path with h.
func hostile(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestHostileServerOutputIsEscaped(t *testing.T) {
	status := hostileStatus(nil)
	srv := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == protocol.PathStatus:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(status)
		case r.URL.Path == protocol.PathHandshake && r.URL.Query().Get(protocol.QueryDryRun) == "1":
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(map[string]any{"code": "incompatible_peer", "message": hostileName,
				"details": map[string]any{"reason": "version_mismatch" + oscClipboard, "message": hostileName}})
		default:
			// Not JSON at all: raw bytes in an error body.
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, "boom "+oscClipboard+"\xff\xfe\x9b")
		}
	})

	code, out, errOut := ctl(t, "status", srv.URL)
	require.Equal(t, 0, code, errOut)
	assertTerminalSafe(t, "the status table", out)
	assert.Contains(t, out, `"nc\x1b]52;c;ZWNobyBwd25lZA==\a`, "the value is shown, quoted and escaped")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		assert.LessOrEqual(t, len(line), 16*(maxCell+32), "a line of the table is bounded: %q", line)
	}

	code, out, errOut = ctl(t, "status", "-o", "json", srv.URL)
	require.Equal(t, 0, code, errOut)
	assertTerminalSafe(t, "-o json", out)
	var back map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &back), "-o json stays JSON")
	assert.Equal(t, hostileName, back["component"], "and says what the server sent, escaped")

	code, out, errOut = ctl(t, "status", "-o", "yaml", srv.URL)
	require.Equal(t, 0, code, errOut)
	assertTerminalSafe(t, "-o yaml", out)
	var backYAML map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(out), &backYAML), "-o yaml stays YAML")

	code, out, errOut = ctl(t, "check", srv.URL, "--contract", "c", "--version", "1.0.0", "--fingerprint", "lsfp1:00", "--component", "kubelet")
	require.Equal(t, exitRefused, code, errOut)
	assertTerminalSafe(t, "check's refusal", out)
	assert.True(t, strings.HasPrefix(out, `refused ("version_mismatch\x1b]52;`), out)

	code, out, errOut = ctl(t, "watch", srv.URL, "T")
	require.Equal(t, 2, code)
	assertTerminalSafe(t, "watch's error", out+errOut)

	// An error body that is not JSON, bytes that are not UTF-8 included.
	code, _, errOut = ctl(t, "status", srv.URL+"/x")
	require.Equal(t, 2, code)
	assertTerminalSafe(t, "an error", errOut)
	assert.Contains(t, errOut, `HTTP 500: "boom \x1b]52;c;ZWNobyBwd25lZA==\a\xff\xfe\x9b"`)
}

func TestHostileWatchFramesAreEscaped(t *testing.T) {
	status := hostileStatus(func(st map[string]any) {
		st["component"] = "nodecontroller"
		st["served"] = []map[string]any{{"contract": "topics", "version": "1.0.0", "fingerprint": "lsfp1:00", "client": "kubelet"}}
		st["topics"] = []map[string]any{{"contract": "topics", "version": "1.0.0", "topic": "NodeHealth"}}
	})
	var closed atomic.Bool
	srv := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == protocol.PathStatus:
			_, _ = w.Write(status)
		case r.URL.Path == protocol.PathHandshake:
			_ = json.NewEncoder(w).Encode(map[string]any{"session": "s1", "version": "1.0.0", "heartbeat": "1h", "ttl": "1h",
				"peer": map[string]any{"component": "nodecontroller", "instance": "i", "release": "1"}})
		case r.URL.Path == protocol.PathSession:
			closed.Store(true)
		case strings.Contains(r.URL.Path, "/watch/"):
			frames := []string{
				`{"type":"set","key":` + jsonString(hostileName) + `,"object":{"v":` + jsonString(hostileName) + `}}`,
				`{"type":"synced","instance":` + jsonString(hostileName) + `}`,
				"{\"type\":\"set\",\"key\":\"raw\x1b[2J\",\"object\":1}", // not JSON: a raw control character in a string
				`{"type":"delete","key":` + jsonString(hostileName) + `}`,
				`{"type":"closing","reason":` + jsonString(hostileName) + `}`,
			}
			for _, f := range frames {
				_, _ = io.WriteString(w, f+"\n")
			}
		}
	})
	code, out, errOut := ctl(t, "watch", srv.URL, "NodeHealth")
	require.Equal(t, 0, code, errOut)
	assertTerminalSafe(t, "watch", out)
	assert.Contains(t, out, `set "nc\x1b]52;`, "a key is quoted")
	assert.Contains(t, out, `\u001b]52;c;`, "an object's string keeps JSON's escape")
	assert.Contains(t, out, `? "{\"type\":\"set\",\"key\":\"raw\x1b[2J\"`, "a frame that is not JSON is quoted whole")
	assert.Contains(t, out, "closing: \"nc\\x1b]52;")
	assert.True(t, closed.Load(), "the session was closed")
}

// watchersStatus is a status of one topic with n watchers, each with the
// selection given: how one grows a status to any size. It is spliced
// together, not marshalled, so that a large one costs the test little.
func watchersStatus(n int, selection string) []byte {
	const mark = "WATCHERS"
	st := hostileStatus(func(st map[string]any) {
		st["topics"] = []map[string]any{{"contract": "c", "version": "1", "topic": "T", "watchers": mark}}
	})
	one := []byte(`{"peer":{"component":"kubelet"},"selection":` + jsonString("node="+selection) + `}`)
	list := make([]byte, 0, 2+n*(len(one)+1))
	list = append(list, '[')
	for i := range n {
		if i > 0 {
			list = append(list, ',')
		}
		list = append(list, one...)
	}
	list = append(list, ']')
	return bytes.Replace(st, []byte(`"`+mark+`"`), list, 1)
}

func TestJSONContainersCountsOutsideStrings(t *testing.T) {
	for _, tc := range []struct {
		json string
		want int64
	}{
		{`{}`, 1},
		{`{"a":[1,{"b":[]}]}`, 4},
		{`{"s":"{[{[ \" {"}`, 1},
		{`["\\",{}]`, 2},
		{`"[{"`, 0},
	} {
		assert.Equal(t, tc.want, jsonContainers([]byte(tc.json)), tc.json)
	}
	// The statuses the framework's tests make stay far below the bound.
	st := hostileStatus(nil)
	assert.Less(t, jsonContainers(st)*bytesPerContainer, int64(len(st)))
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestHostileServerSizesAreBounded sends answers far over --max-bytes:
// lockstepctl refuses them having read at most the bound, whether the
// server says their length, sends them whole, or never ends.
func TestHostileServerSizesAreBounded(t *testing.T) {
	huge := watchersStatus(4096, strings.Repeat("x", 16<<10)) // 4,096 watchers with 16 KB selections
	require.Greater(t, len(huge), 60<<20)
	chunk := bytes.Repeat([]byte(`{"component":"x",`), 4096)
	// Within the bound in bytes, but three bytes an object: decoded and
	// printed, each is hundreds.
	dense := []byte(`{"component":"x","sessions":[{}` + strings.Repeat(`,{}`, (4<<20-64)/3) + `]}`)
	srv := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		switch strings.Split(r.URL.Path, "/")[1] {
		case "small":
			_, _ = w.Write(hostileStatus(nil))
		case "dense":
			_, _ = w.Write(dense)
		case "length": // Content-Length says it all
			w.Header().Set("Content-Length", fmt.Sprint(len(huge)))
			_, _ = w.Write(huge)
		case "chunked": // no length, sent whole
			for b := huge; len(b) > 0; b = b[min(len(b), 1<<20):] {
				if _, err := w.Write(b[:min(len(b), 1<<20)]); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		case "endless": // never ends, as fast as it can
			for {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	})
	// What lockstepctl holds to refuse an answer is the bound, not the
	// answer (16 times the bound): its peak memory against its peak reading
	// a small status is a few times the bound (a buffer grown by doubling,
	// and what the collector has not collected yet).
	const limit = 4 << 20
	base := peakOf(t, "status", "-o", "yaml", srv.URL+"/small")
	for _, shape := range []string{"length", "chunked", "endless", "dense"} {
		r := peakOf(t, "status", "-o", "yaml", "--max-bytes", fmt.Sprint(limit), srv.URL+"/"+shape)
		assert.Equal(t, 2, r.code, shape)
		assert.Empty(t, r.stdout, shape)
		if shape == "dense" {
			assert.Contains(t, r.stderr, "JSON objects and arrays in 4194", shape)
			assert.Contains(t, r.stderr, "over the 65536 --max-bytes 4194304 allows", shape)
		} else {
			assert.Contains(t, r.stderr, "over --max-bytes 4194304", shape)
		}
		assert.Less(t, r.rss-base.rss, int64(memFactor()*8*limit), "%s: peak RSS %d, %d reading a small status", shape, r.rss, base.rss)
		t.Logf("%s: refused in %v, peak RSS %.1f MiB (%.1f MiB reading a small status)", shape, r.took.Round(time.Millisecond),
			float64(r.rss)/(1<<20), float64(base.rss)/(1<<20))
	}

	// A watch frame over the bound ends the watch; it is not buffered.
	status := hostileStatus(func(st map[string]any) {
		st["served"] = []map[string]any{{"contract": "topics", "version": "1.0.0", "fingerprint": "lsfp1:00", "client": "kubelet"}}
		st["topics"] = []map[string]any{{"contract": "topics", "version": "1.0.0", "topic": "NodeHealth"}}
	})
	line := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == protocol.PathStatus:
			_, _ = w.Write(status)
		case r.URL.Path == protocol.PathHandshake:
			_, _ = io.WriteString(w, `{"session":"s1","version":"1.0.0","heartbeat":"1h","ttl":"1h","peer":{"component":"nc"}}`)
		case strings.Contains(r.URL.Path, "/watch/"):
			_, _ = io.WriteString(w, `{"type":"set","key":"k","object":"`)
			for {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	})
	code, _, errOut := ctl(t, "watch", "--max-bytes", fmt.Sprint(1<<20), line.URL, "NodeHealth")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "a frame over --max-bytes 1048576")
}

// init runs lockstepctl's main instead of the tests when the test binary
// is started as a subprocess (subprocess), so that signal handling and
// memory are those of a real process.
func init() {
	if args := os.Getenv("LOCKSTEPCTL_TEST_ARGS"); args != "" {
		var a []string
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			panic(err)
		}
		os.Args = append([]string{"lockstepctl"}, a...)
		code := mainCode()
		// The peak memory of this process since its exec (the kernel's
		// ru_maxrss of a child started by vfork counts its parent's).
		if b, err := os.ReadFile("/proc/self/status"); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(line, "VmHWM:") {
					fmt.Fprintln(os.Stderr, "test-peak-rss:", strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")))
				}
			}
		}
		os.Exit(code)
	}
}

// subprocess starts lockstepctl with args as a process of its own.
func subprocess(t *testing.T, args ...string) (*exec.Cmd, *lineBuffer, *lineBuffer) {
	t.Helper()
	enc, err := json.Marshal(args)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LOCKSTEPCTL_TEST_ARGS="+string(enc))
	var stdout, stderr lineBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, &stdout, &stderr
}

// waitExit waits for cmd to end within bound.
func waitExit(t *testing.T, cmd *exec.Cmd, bound time.Duration) (exitCode int, took time.Duration) {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return cmd.ProcessState.ExitCode(), time.Since(start)
	case <-time.After(bound):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("lockstepctl did not end within %v", bound)
		return -1, 0
	}
}

// memFactor is how much more memory a build takes than a plain one.
func memFactor() int {
	if raceEnabled {
		return 4
	}
	return 1
}

// result is how a lockstepctl process ended.
type result struct {
	code           int
	stdout, stderr string
	rss            int64
	took           time.Duration
}

// peakOf runs lockstepctl in a process of its own, to its end.
func peakOf(t *testing.T, args ...string) result {
	t.Helper()
	cmd, stdout, stderr := subprocess(t, args...)
	code, took := waitExit(t, cmd, 2*time.Minute)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String(), rss: peakRSS(t, stderr.String()), took: took}
}

// peakRSS is the peak resident memory a subprocess reported on stderr.
func peakRSS(t *testing.T, stderr string) int64 {
	t.Helper()
	var kib int64
	i := strings.Index(stderr, "test-peak-rss: ")
	require.GreaterOrEqual(t, i, 0, "no peak reported: %s", stderr)
	_, err := fmt.Sscanf(stderr[i:], "test-peak-rss: %d kB", &kib)
	require.NoError(t, err)
	return kib << 10
}

// TestSignalsEndLockstepctl sends SIGTERM to a status read that a server
// trickles forever, and SIGINT to a watch: each process ends promptly.
func TestSignalsEndLockstepctl(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("signals and rusage as Linux has them")
	}
	reading := make(chan struct{}, 4)
	closed := make(chan struct{}, 1)
	watchStatus := hostileStatus(func(st map[string]any) {
		st["served"] = []map[string]any{{"contract": "topics", "version": "1.0.0", "fingerprint": "lsfp1:00", "client": "kubelet"}}
		st["topics"] = []map[string]any{{"contract": "topics", "version": "1.0.0", "topic": "NodeHealth"}}
	})
	srv := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == protocol.PathStatus:
			_, _ = w.Write(watchStatus)
		case r.URL.Path == "/trickle"+protocol.PathStatus:
			_, _ = io.WriteString(w, `{"component":"`)
			w.(http.Flusher).Flush()
			reading <- struct{}{}
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-r.Context().Done():
					return
				case <-tick.C:
					if _, err := io.WriteString(w, "x"); err != nil {
						return
					}
					w.(http.Flusher).Flush()
				}
			}
		case r.URL.Path == protocol.PathHandshake:
			_, _ = io.WriteString(w, `{"session":"s1","version":"1.0.0","heartbeat":"1h","ttl":"1h","peer":{"component":"nc"}}`)
		case r.URL.Path == protocol.PathSession:
			closed <- struct{}{}
		case strings.Contains(r.URL.Path, "/watch/"):
			_, _ = io.WriteString(w, `{"type":"synced","instance":"i"}`+"\n")
			w.(http.Flusher).Flush()
			reading <- struct{}{}
			<-r.Context().Done()
		}
	})

	cmd, _, stderr := subprocess(t, "status", "-o", "yaml", "--timeout", "1h", srv.URL+"/trickle")
	waitSignal(t, reading)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	code, took := waitExit(t, cmd, 10*time.Second)
	assert.Equal(t, 128+int(syscall.SIGTERM), code, stderr.String())
	assert.Contains(t, stderr.String(), "lockstepctl: interrupted")
	t.Logf("status ended %v after SIGTERM", took.Round(time.Millisecond))

	cmd, stdout, stderr := subprocess(t, "watch", srv.URL, "NodeHealth")
	waitSignal(t, reading)
	stdout.waitFor(t, "synced (held by instance i)")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	code, took = waitExit(t, cmd, 10*time.Second)
	assert.Equal(t, 0, code, "an interrupted watch ends well: %s", stderr.String())
	assert.Contains(t, stdout.String(), "synced (held by instance i)")
	waitSignal(t, closed)
	t.Logf("watch ended %v after SIGINT, its session closed", took.Round(time.Millisecond))
}

func waitSignal(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never saw the request")
	}
}

// TestHostileStatusRenderedWithinBounds renders, in a process of its own,
// a status just under --max-bytes made of what expands most in YAML
// (control characters, each escaped), and reports its peak memory.
func TestHostileStatusRenderedWithinBounds(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("rusage as Linux has it")
	}
	// What expands most: each control character is six bytes of JSON and
	// four of YAML, each C1 character six. part is just under --max-bytes
	// of the test, status just under its default.
	// Under the race detector, which slows them ten times, both are a
	// quarter of part's size.
	limit, whole := 4<<20, defaultMaxBytes
	if raceEnabled {
		limit, whole = limit/4, limit/4
	}
	selection := strings.Repeat("\x1b\u009b", 1200)
	one := len(watchersStatus(1, selection))
	each := len(watchersStatus(2, selection)) - one
	part := watchersStatus((limit-one)/each, selection)
	status := watchersStatus((whole-one)/each, selection)
	require.Greater(t, len(part), limit*9/10)
	require.LessOrEqual(t, len(status), whole)
	// What costs most to decode and render: as many small sessions as the
	// bound on objects lets through, each two objects in 128 bytes.
	session := `{"peer":{},"contract":"` + strings.Repeat("c", 128-len(`{"peer":{},"contract":""},`)) + `"}`
	sessions := []byte(`{"component":"nc","sessions":[` + session + strings.Repeat(","+session, (limit-64)/(len(session)+1)-1) + `]}`)
	require.Less(t, len(sessions), limit)
	served := make(chan struct{}, 1)
	srv := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		switch strings.Split(r.URL.Path, "/")[1] {
		case "small":
			_, _ = w.Write(hostileStatus(nil))
		case "escapes":
			_, _ = w.Write(part)
		case "sessions":
			_, _ = w.Write(sessions)
		default:
			_, _ = w.Write(status)
			select {
			case served <- struct{}{}:
			default:
			}
		}
	})
	// Under the race detector each process takes seconds to start and
	// decode: one baseline, and the shape that costs most.
	shapes := []string{"escapes", "sessions"}
	var base result
	if raceEnabled {
		shapes = shapes[1:]
		base = peakOf(t, "status", srv.URL+"/small")
	}
	for _, format := range []string{"yaml", "json", "table"} {
		if !raceEnabled {
			base = peakOf(t, "status", "-o", format, srv.URL+"/small")
		}
		for _, shape := range shapes {
			r := peakOf(t, "status", "-o", format, "--max-bytes", fmt.Sprint(limit), srv.URL+"/"+shape)
			require.Equal(t, 0, r.code, r.stderr)
			assertTerminalSafe(t, "-o "+format, r.stdout)
			// JSON's escapes make each byte of the selections six, a
			// session's 128 bytes are some hundreds decoded: the bound
			// is on what was read, times what decoding and a render make
			// of a byte (some 12 at most, measured).
			assert.Less(t, r.rss-base.rss, int64(memFactor()*24*limit), "-o %s of %s: peak RSS %d, %d for a small status", format, shape, r.rss, base.rss)
			t.Logf("-o %s of %.1f MiB of %s: %.1f MiB printed in %v, peak RSS %.0f MiB (%.0f MiB for a small status)", format,
				float64(limit)/(1<<20), shape, float64(len(r.stdout))/(1<<20), r.took.Round(time.Millisecond), float64(r.rss)/(1<<20), float64(base.rss)/(1<<20))
		}
	}

	// SIGTERM while it decodes or renders, its output stuck (a pager
	// that reads nothing: the pipe is never drained, so the render cannot
	// finish) ends the process all the same, within the grace period.
	stuck, out, err := os.Pipe()
	require.NoError(t, err)
	defer stuck.Close()
	enc, err := json.Marshal([]string{"status", "-o", "yaml", srv.URL + "/whole"})
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LOCKSTEPCTL_TEST_ARGS="+string(enc))
	var stderr lineBuffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	require.NoError(t, cmd.Start())
	out.Close()
	waitSignal(t, served)
	// Wait until the pipe is full, so that the process is blocked in a
	// write that no cancellation ends: only the grace period does.
	require.Eventually(t, func() bool { return pipeBuffered(t, stuck) >= 60<<10 }, time.Minute, time.Millisecond,
		"the output never filled its pipe")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	code, took := waitExit(t, cmd, 10*time.Second)
	assert.Equal(t, 128+int(syscall.SIGTERM), code, stderr.String())
	assert.Less(t, took, shutdownGrace+5*time.Second)
	t.Logf("-o yaml blocked writing to a full pipe ended %v after SIGTERM (grace %v)", took.Round(time.Millisecond), shutdownGrace)
}

// pipeBuffered is how many bytes wait in a pipe (FIONREAD).
func pipeBuffered(t *testing.T, r *os.File) int {
	t.Helper()
	var n int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, r.Fd(), syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 {
		t.Fatalf("FIONREAD: %v", errno)
	}
	return int(n)
}
