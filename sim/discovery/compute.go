package discovery

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	compute "google.golang.org/api/compute/v1"
)

// computeModule is the module whose compute/v1/compute-api.json is the
// model of sim/gcefake: the one the Compute client of this build comes
// from. Its 6.4 MB are read where the module cache holds them rather
// than copied into the repository.
const computeModule = "google.golang.org/api"

// Compute is the compute/v1 document of the google.golang.org/api this
// binary is built with, read once.
var Compute = sync.OnceValues(func() (*Doc, error) {
	path, err := computeDocPath()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the compute/v1 discovery document: %w", err)
	}
	return Load(data)
})

// computeDocPath finds compute-api.json beside the compute client's
// source, where the compiler saw it; failing that (a -trimpath build), in
// the module cache under the version of the module this binary was built
// with.
func computeDocPath() (string, error) {
	pc := reflect.ValueOf(compute.NewService).Pointer()
	if f := runtime.FuncForPC(pc); f != nil {
		file, _ := f.FileLine(pc)
		p := filepath.Join(filepath.Dir(file), "compute-api.json")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	version := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == computeModule {
				version = m.Version
				if m.Replace != nil {
					version = m.Replace.Version
				}
			}
		}
	}
	if version == "" {
		return "", errors.New("cannot find the compute/v1 discovery document: no version of " + computeModule + " in the build")
	}
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		out, err := exec.Command("go", "env", "GOMODCACHE").Output()
		if err != nil {
			return "", fmt.Errorf("cannot find the module cache for the compute/v1 discovery document: %w", err)
		}
		cache = strings.TrimSpace(string(out))
	}
	return filepath.Join(cache, computeModule+"@"+version, "compute", "v1", "compute-api.json"), nil
}
