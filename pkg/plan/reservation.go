package plan

// Reservation is capacity a run reserves for its scale-up before it makes
// it (aws: an On-Demand Capacity Reservation, --reserve-surge), recorded
// before the cloud is asked: Token names it to the cloud (its idempotency
// token and tag), so a run killed before it recorded ID finds it again.
type Reservation struct {
	Zone         string `json:"zone"`
	InstanceType string `json:"instanceType"`
	Count        int32  `json:"count"`
	Token        string `json:"token"`
	// ID is the cloud's, once made.
	ID string `json:"id,omitempty"`
	// Released says the run cancelled it (or found it gone).
	Released bool `json:"released,omitempty"`
}
