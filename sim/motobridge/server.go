// Package motobridge makes moto (a widely used third-party implementation
// of the Auto Scaling and EC2 APIs, in Python) a second AWS endpoint for the
// end-to-end tests: Start serves it on a loopback port, corrected where it
// contradicts AWS's documentation (see moto_server.py), CreateNodeGroup
// builds a node group on it through the AWS SDK, and Mirror turns its EC2
// instances into kwok nodes of the simulated cluster the way awsfake does.
package motobridge

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

//go:embed moto_server.py
var launcher []byte

// Options configure Start.
type Options struct {
	// AsInstalled serves moto without the corrections of moto_server.py,
	// to show what they correct.
	AsInstalled bool
	// Python is the interpreter that has moto; default "python3".
	Python string
	// StartTimeout bounds the start; default 3m. Importing moto takes
	// seconds alone, but over a minute was seen with several starting at
	// once (parallel tests) on a 2-core machine busy with builds.
	StartTimeout time.Duration
}

// Server is a running moto server.
type Server struct {
	// URL is the endpoint for AWS_ENDPOINT_URL: http://127.0.0.1:port.
	URL string

	cmd    *exec.Cmd
	stdin  io.Closer
	dir    string
	exited chan struct{}

	mu     sync.Mutex
	stderr bytes.Buffer
}

// Start starts moto on a free loopback port and returns once it listens.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Python == "" {
		o.Python = "python3"
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 3 * time.Minute
	}
	python, err := exec.LookPath(o.Python)
	if err != nil {
		return nil, fmt.Errorf("cannot start moto: %w; it needs Python with moto 5.2.1 installed", err)
	}
	dir, err := os.MkdirTemp("", "motobridge-")
	if err != nil {
		return nil, err
	}
	script := filepath.Join(dir, "moto_server.py")
	if err := os.WriteFile(script, launcher, 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	args := []string{"-u", script}
	if o.AsInstalled {
		args = append(args, "--as-installed")
	}
	s := &Server{dir: dir, exited: make(chan struct{})}
	// Not bound to ctx: the server lives until Close, ctx only bounds the
	// start.
	s.cmd = exec.Command(python, args...)
	s.cmd.Dir = dir
	// Credentials and endpoints of the machine have no business in moto.
	s.cmd.Env = append(withoutAWS(os.Environ()), "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_DEFAULT_REGION=us-east-1")
	s.cmd.Stderr = &lockedWriter{mu: &s.mu, w: &s.stderr}
	// The launcher exits when its stdin closes: when Close closes it, or
	// when this process dies.
	stdin, err := s.cmd.StdinPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.stdin = stdin
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("cannot start moto: %w", err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "port "); ok {
				port <- p
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	ctx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()
	select {
	case p := <-port:
		s.URL = "http://127.0.0.1:" + p
		return s, nil
	case <-s.exited:
		err = errors.New("it exited")
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.Close()
	return nil, fmt.Errorf("cannot start moto (%s %s): %w; stderr:\n%s", o.Python, strings.Join(args, " "), err, s.Stderr())
}

// Stderr is what the server has written to stderr: tracebacks of requests
// it failed with HTTP 500.
func (s *Server) Stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// Close stops the server and waits for it to exit.
func (s *Server) Close() {
	_ = s.stdin.Close()
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	os.RemoveAll(s.dir)
}

// Config is an AWS SDK configuration for this server in region, with
// static test credentials.
func (s *Server) Config(region string) aws.Config {
	return aws.Config{
		Region:       region,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(s.URL),
	}
}

func withoutAWS(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "MOTO_") {
			out = append(out, kv)
		}
	}
	return out
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
