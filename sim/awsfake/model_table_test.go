package awsfake

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
)

var updateModelTable = flag.Bool("update-model-table", false, "write model_table.jsonl from botocore's models")

// modelOps are the operations whose input model_table.jsonl holds: those
// pkg/cloud/aws calls (and the SDK's paginators of them), and the Auto
// Scaling calls of the lifecycle hooks and warm pools the sim's callers
// make; the API version is the one the fake serves.
var modelOps = []struct {
	service, version string
	ops              []string
}{
	{"autoscaling", "2011-01-01", []string{"AttachLoadBalancerTargetGroups", "AttachLoadBalancers", "CompleteLifecycleAction",
		"CreateAutoScalingGroup", "CreateOrUpdateTags", "DeleteAutoScalingGroup", "DeleteWarmPool", "DescribeAccountLimits",
		"DescribeAutoScalingGroups", "DescribeAutoScalingInstances", "DescribeLifecycleHooks", "DescribeLoadBalancerTargetGroups",
		"DescribeLoadBalancers", "DescribeScalingActivities", "DescribeWarmPool", "PutLifecycleHook", "PutWarmPool", "RecordLifecycleActionHeartbeat",
		"ResumeProcesses", "SetDesiredCapacity", "SetInstanceProtection", "SuspendProcesses", "TerminateInstanceInAutoScalingGroup",
		"UpdateAutoScalingGroup"}},
	{"ec2", "2016-11-15", []string{"CancelCapacityReservation", "CreateCapacityReservation", "CreateLaunchTemplateVersion", "DescribeCapacityReservations", "DescribeImages", "DescribeInstanceTypeOfferings",
		"DescribeInstanceTypes", "DescribeInstances", "DescribeLaunchTemplateVersions", "DescribeSubnets", "ModifyLaunchTemplate"}},
	{"eks", "2017-11-01", []string{"CreateNodegroup", "DeleteNodegroup", "DescribeCluster", "DescribeNodegroup",
		"DescribeUpdate", "ListNodegroups", "ListUpdates", "UpdateNodegroupConfig", "UpdateNodegroupVersion"}},
	{"elb", "2012-06-01", []string{"DeregisterInstancesFromLoadBalancer", "DescribeInstanceHealth", "DescribeLoadBalancerAttributes"}},
	{"elbv2", "2015-12-01", []string{"DeregisterTargets", "DescribeTargetGroupAttributes", "DescribeTargetHealth"}},
	{"iam", "2010-05-08", []string{"GetRole", "SimulatePrincipalPolicy"}},
	{"sts", "2011-06-15", []string{"GetCallerIdentity"}},
	{"ssm", "2014-11-06", []string{"GetParameter"}},
}

// botoModel is what the table reads of a botocore service-2.json.
type botoModel struct {
	Metadata struct {
		Protocol string `json:"protocol"`
	} `json:"metadata"`
	Operations map[string]struct {
		HTTP struct {
			Method     string `json:"method"`
			RequestURI string `json:"requestUri"`
		} `json:"http"`
		Input *botoMember `json:"input"`
	} `json:"operations"`
	Shapes map[string]botoShape `json:"shapes"`
}

type botoShape struct {
	Type      string                `json:"type"`
	Required  []string              `json:"required"`
	Members   map[string]botoMember `json:"members"`
	Member    *botoMember           `json:"member"`
	Key       *botoMember           `json:"key"`
	Value     *botoMember           `json:"value"`
	Min       *json.Number          `json:"min"`
	Max       *json.Number          `json:"max"`
	Pattern   string                `json:"pattern"`
	Enum      []string              `json:"enum"`
	Flattened bool                  `json:"flattened"`
}

type botoMember struct {
	Shape        string `json:"shape"`
	Location     string `json:"location"`
	LocationName string `json:"locationName"`
	QueryName    string `json:"queryName"`
	Flattened    bool   `json:"flattened"`
}

// botocoreData is botocore's data directory: $BOTOCORE_DATA, or that of
// the botocore python3 imports.
func botocoreData() (string, error) {
	if d := os.Getenv("BOTOCORE_DATA"); d != "" {
		return d, nil
	}
	out, err := exec.Command("python3", "-c", "import botocore,os;print(os.path.dirname(botocore.__file__))").Output()
	if err != nil {
		return "", fmt.Errorf("cannot import botocore with python3: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "data"), nil
}

func loadBotoModel(dir, service, version string) (*botoModel, error) {
	f, err := os.Open(filepath.Join(dir, service, version, "service-2.json.gz"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	var m botoModel
	return &m, json.NewDecoder(z).Decode(&m)
}

// generateModelTable is model_table.jsonl as the models in dir say.
func generateModelTable(dir string) ([]byte, error) {
	var buf bytes.Buffer
	for _, svc := range modelOps {
		m, err := loadBotoModel(dir, svc.service, svc.version)
		if err != nil {
			return nil, err
		}
		for _, op := range slices.Sorted(slices.Values(svc.ops)) {
			o, ok := m.Operations[op]
			if !ok {
				return nil, fmt.Errorf("%s has no operation %s", svc.service, op)
			}
			g := &tableGen{m: m, service: svc.service, op: op}
			if p := m.Metadata.Protocol; p == "rest-json" {
				g.add(tableRule{HTTP: o.HTTP.Method + " " + o.HTTP.RequestURI})
			}
			if o.Input != nil {
				if err := g.structure(o.Input.Shape, "", map[string]bool{}); err != nil {
					return nil, err
				}
			}
			for _, r := range g.rules {
				line, _ := json.Marshal(r)
				buf.Write(append(line, '\n'))
			}
		}
	}
	return buf.Bytes(), nil
}

// tableGen walks one operation's input.
type tableGen struct {
	m           *botoModel
	service, op string
	rules       []tableRule
}

func (g *tableGen) add(r tableRule) {
	r.Service, r.Op = g.service, g.op
	g.rules = append(g.rules, r)
}

// structure adds the members of a structure shape at path; seen stops a
// recursive shape.
func (g *tableGen) structure(shape, path string, seen map[string]bool) error {
	s := g.m.Shapes[shape]
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range s.Members {
			if !yield(k) {
				return
			}
		}
	}) {
		mem := s.Members[name]
		wire, ok := g.wireName(name, mem)
		if !ok || seen[mem.Shape] {
			continue
		}
		next := map[string]bool{mem.Shape: true}
		for k := range seen {
			next[k] = true
		}
		if err := g.member(mem, joinPath(path, wire), slices.Contains(s.Required, name), next); err != nil {
			return err
		}
	}
	return nil
}

// wireName is how the protocol names a member in the request; ok is
// false for a header.
func (g *tableGen) wireName(name string, mem botoMember) (string, bool) {
	switch g.m.Metadata.Protocol {
	case "ec2": // botocore serialize.py EC2Serializer._get_serialized_name
		if mem.QueryName != "" {
			return mem.QueryName, true
		}
		if mem.LocationName != "" {
			r := []rune(mem.LocationName)
			return string(unicode.ToUpper(r[0])) + string(r[1:]), true
		}
		return name, true
	case "rest-json":
		switch mem.Location {
		case "uri", "querystring":
			return mem.Location + ":" + mem.LocationName, true
		case "header", "headers":
			return "", false
		}
	}
	if mem.LocationName != "" {
		return mem.LocationName, true
	}
	return name, true
}

// member adds the rule of one member at path, and those of its parts.
func (g *tableGen) member(mem botoMember, path string, required bool, seen map[string]bool) error {
	s := g.m.Shapes[mem.Shape]
	r := tableRule{Path: path, Type: s.Type, Required: required, Pattern: s.Pattern, Enum: s.Enum}
	var err error
	if r.Min, err = intOf(s.Min); err != nil {
		return err
	}
	if r.Max, err = intOf(s.Max); err != nil {
		return err
	}
	switch s.Type {
	case "structure":
		r.Pattern, r.Enum = "", nil
		if required {
			g.add(tableRule{Path: path, Type: s.Type, Required: true})
		}
		return g.structure(mem.Shape, path, seen)
	case "list":
		r.Elem = g.listElem(path, s, mem)
		g.addConstrained(r, r.Min != nil || r.Max != nil)
		return g.member(*s.Member, r.Elem+".#", false, seen)
	case "map":
		r.Elem = path + ".entry"
		if s.Flattened || mem.Flattened {
			r.Elem = path
		}
		g.add(r) // always: jsonForm reads a map's entries by it
		if err := g.member(*s.Key, r.Elem+".#."+cmp.Or(s.Key.LocationName, "key"), false, seen); err != nil {
			return err
		}
		return g.member(*s.Value, r.Elem+".#."+cmp.Or(s.Value.LocationName, "value"), false, seen)
	case "string", "integer", "long":
		g.addConstrained(r, r.Min != nil || r.Max != nil || r.Pattern != "" || len(r.Enum) > 0)
	default:
		g.addConstrained(tableRule{Path: path, Type: s.Type, Required: required}, false)
	}
	return nil
}

// addConstrained adds r when it is required or constrained.
func (g *tableGen) addConstrained(r tableRule, constrained bool) {
	if r.Required || constrained {
		g.add(r)
	}
}

// listElem is the prefix a list's elements are numbered under: the
// query protocol's name.member (or the member's locationName), name
// itself when flattened and in EC2's and JSON's.
func (g *tableGen) listElem(path string, s botoShape, mem botoMember) string {
	if g.m.Metadata.Protocol != "query" || s.Flattened || mem.Flattened {
		return path
	}
	return path + "." + cmp.Or(s.Member.LocationName, "member")
}

func intOf(n *json.Number) (*int64, error) {
	if n == nil {
		return nil, nil
	}
	v, err := n.Int64()
	if err != nil {
		return nil, fmt.Errorf("bound %s: %w", n, err)
	}
	return &v, nil
}

// TestModelTable: model_table.jsonl is what botocore's models say of the
// operations in modelOps, and every pattern in it compiles. Without
// botocore (python3 -m pip install botocore, or moto) it only checks that
// the table reads; -update-model-table writes it again.
func TestModelTable(t *testing.T) {
	if _, err := parseModelTable(modelTableText); err != nil {
		t.Fatal(err)
	}
	dir, err := botocoreData()
	if err != nil {
		t.Skipf("botocore's models are not here (%v): model_table.jsonl is not compared with them", err)
	}
	want, err := generateModelTable(dir)
	if err != nil {
		t.Fatal(err)
	}
	if *updateModelTable {
		if err := os.WriteFile("model_table.jsonl", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(modelTableText, want) {
		t.Fatalf("model_table.jsonl differs from botocore's models in %s; run go test ./awsfake -run TestModelTable -update-model-table", dir)
	}
}
