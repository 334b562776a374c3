package gcpclient

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	compute "google.golang.org/api/compute/v1"
)

var update = flag.Bool("update", false, "write compute_methods.txt from compute-api.json")

// computeDocMethod is what compute-api.json says of a method.
type computeDocMethod struct {
	ID         string                     `json:"id"`
	HTTPMethod string                     `json:"httpMethod"`
	Path       string                     `json:"path"`
	FlatPath   string                     `json:"flatPath"`
	Parameters map[string]json.RawMessage `json:"parameters"`
}

type docResource struct {
	Methods   map[string]computeDocMethod `json:"methods"`
	Resources map[string]docResource      `json:"resources"`
}

// computeDocMethods are every method of the compute-api.json that ships
// beside the compute client, nested resources' too.
func computeDocMethods(t *testing.T) []computeDocMethod {
	t.Helper()
	pc := reflect.ValueOf(compute.NewService).Pointer()
	file, _ := runtime.FuncForPC(pc).FileLine(pc)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(file), "compute-api.json"))
	if err != nil {
		t.Fatalf("cannot read compute-api.json beside the compute client: %v", err)
	}
	var doc docResource
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var out []computeDocMethod
	var walk func(docResource)
	walk = func(r docResource) {
		for _, m := range r.Methods {
			out = append(out, m)
		}
		for _, sub := range r.Resources {
			walk(sub)
		}
	}
	walk(doc)
	return out
}

// tablePath is the method's path with one segment per {name}.
func (m computeDocMethod) tablePath() string {
	if m.FlatPath != "" {
		return m.FlatPath
	}
	return m.Path
}

// computeTableOf is computeMethodsTable as compute-api.json has it.
func computeTableOf(methods []computeDocMethod) string {
	var lines []string
	for _, m := range methods {
		if m.HTTPMethod == "GET" {
			continue
		}
		param := "-"
		if _, ok := m.Parameters["requestId"]; ok {
			param = "requestId"
		}
		lines = append(lines, m.HTTPMethod+" "+m.tablePath()+" "+param+"\n")
	}
	slices.Sort(lines)
	return "# Compute methods but GET, from compute-api.json (see computeMethodsTable); do not edit.\n" + strings.Join(lines, "")
}

// TestComputeMethodsTable: the table the transport reads is
// compute-api.json's, so a new google.golang.org/api cannot change which
// methods take a requestId without this failing.
func TestComputeMethodsTable(t *testing.T) {
	want := computeTableOf(computeDocMethods(t))
	if *update {
		if err := os.WriteFile("compute_methods.txt", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if computeMethodsTable != want {
		t.Fatalf("compute_methods.txt differs from compute-api.json; run go test ./pkg/cloud/internal/gcpclient -run TestComputeMethodsTable -update")
	}
}

// TestComputeRequestIDOfEveryMethod: every Compute method but a GET gets a
// requestId from the transport exactly when compute-api.json gives it
// one, and is sent again after a 503 only with it, or when its name says
// it reads (wait, list*, get*, testIamPermissions): a change without one
// (setIamPolicy, setLabels, applyUpdatesToInstances, ...) may have been
// done.
func TestComputeRequestIDOfEveryMethod(t *testing.T) {
	param := regexp.MustCompile(`\{[^}]+\}`)
	for _, m := range computeDocMethods(t) {
		if m.HTTPMethod == "GET" {
			continue
		}
		t.Run(m.ID, func(t *testing.T) {
			_, documented := m.Parameters["requestId"]
			name := m.ID[strings.LastIndex(m.ID, ".")+1:]
			reads := !documented && (name == "wait" || name == "testIamPermissions" || strings.HasPrefix(name, "list") || strings.HasPrefix(name, "get"))
			url, sent := firstFails(t)
			c := &http.Client{Transport: &Transport{Base: http.DefaultTransport, API: Compute, Attempts: maxAttempts, Backoff: time.Millisecond}}
			req, _ := http.NewRequestWithContext(context.Background(), m.HTTPMethod, url+"/compute/v1/"+param.ReplaceAllString(m.tablePath(), "x")+"?alt=json", strings.NewReader("{}"))
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			ids := sent()
			if want := 1 + btoi(documented || reads); len(ids) != want {
				t.Errorf("%s %s sent %d times after a 503, want %d", m.HTTPMethod, m.tablePath(), len(ids), want)
			}
			if (ids[0] != "") != documented {
				t.Errorf("%s %s: requestId %q; compute-api.json gives it one: %v", m.HTTPMethod, m.tablePath(), ids[0], documented)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
