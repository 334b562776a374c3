package awsfake

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
)

// quotaState holds the Service Quotas values the tests set (SetQuota);
// a quota not set answers defaultQuota.
type quotaState struct {
	values map[string]float64 // by "<service>/<quota code>"
}

// defaultQuota is the scenario's value of a quota no test set: roomy, so
// that only a test that means to run short does.
const defaultQuota = 1000

// instanceTypeVCPUs are the default vCPUs of the instance types the
// scenarios launch, as the Amazon EC2 "Instance type specifications"
// (https://docs.aws.amazon.com/ec2/latest/instancetypes/gp.html) list
// them; DescribeInstanceTypes answers InvalidInstanceType for another.
var instanceTypeVCPUs = map[string]int{
	"m5.large": 2, "m5.xlarge": 4, "m5.2xlarge": 8, "m5.4xlarge": 16,
	"c5.large": 2, "c5.xlarge": 4, "t3.medium": 2, "t3.large": 2,
}

// SetQuota sets a Service Quotas value (service "ec2", code "L-1216C47A").
func (s *Server) SetQuota(service, code string, value float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.quotas.values == nil {
		s.quotas.values = map[string]float64{}
	}
	s.quotas.values[service+"/"+code] = value
}

// codePattern is ServiceCode's and QuotaCode's pattern in botocore's
// service-quotas/2019-06-24/service-2.json (min 1, max 63 and 128).
var codePattern = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]{1,128}$`)

// serveQuotas answers Service Quotas' GetServiceQuota (JSON 1.1, target
// prefix ServiceQuotasV20190624 in botocore's model); its request's
// ServiceCode and QuotaCode are required there.
func (s *Server) serveQuotas(w http.ResponseWriter, r *http.Request) bool {
	target := r.Header.Get("X-Amz-Target")
	if !strings.HasPrefix(target, "ServiceQuotasV20190624.") {
		return false
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	fail := func(code, msg string) bool {
		w.Header().Set("X-Amzn-ErrorType", code)
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg})
		return true
	}
	if target != "ServiceQuotasV20190624.GetServiceQuota" {
		return fail("UnknownOperationException", target)
	}
	var req struct{ ServiceCode, QuotaCode string }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return fail("IllegalArgumentException", err.Error())
	}
	if !codePattern.MatchString(req.ServiceCode) || len(req.ServiceCode) > 63 || !codePattern.MatchString(req.QuotaCode) {
		return fail("IllegalArgumentException", "invalid ServiceCode or QuotaCode")
	}
	s.mu.Lock()
	v, ok := s.quotas.values[req.ServiceCode+"/"+req.QuotaCode]
	s.mu.Unlock()
	if !ok {
		v = defaultQuota
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"Quota": map[string]any{
		"ServiceCode": req.ServiceCode, "QuotaCode": req.QuotaCode, "Value": v, "Unit": "None"}})
	return true
}

// describeInstanceTypes answers DescribeInstanceTypes for the types named
// (InstanceType.N): their vCpuInfo.defaultVCpus and networkInfo
// (instanceTypeNetwork), as botocore's ec2 model shapes InstanceTypeInfo.
func (s *Server) describeInstanceTypes(f form) ([]*node, error) {
	var items []*node
	for _, t := range f.list("InstanceType") {
		v, ok := instanceTypeVCPUs[t]
		if !ok {
			return nil, ec2Err("InvalidInstanceType", "The following supplied instance types do not exist: [%s]", t)
		}
		nw := instanceTypeNetwork[t]
		items = append(items, el("item", txt("instanceType", t), el("vCpuInfo", num("defaultVCpus", v)),
			el("networkInfo", num("maximumNetworkInterfaces", nw[0]), num("ipv4AddressesPerInterface", nw[1]))))
	}
	return []*node{el("instanceTypeSet", items...)}, nil
}
