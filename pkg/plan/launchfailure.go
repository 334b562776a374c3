package plan

import "time"

// LaunchFailure is a cloud's refusal to launch a group's machines that no
// wait outlasts (its capacity, addresses, quota, or the instance type in
// a zone), as the cloud reports it: what a run that meets one records and
// says, then stops before it drains anything.
type LaunchFailure struct {
	// Code is the cloud's error code (EC2's InsufficientInstanceCapacity,
	// InsufficientFreeAddressesInSubnet, Unsupported, VcpuLimitExceeded),
	// Message its words.
	Code    string `json:"code"`
	Message string `json:"message"`
	// Zones are where the cloud refused; Launched, where the group
	// launched since the scale-up began: the zones with capacity.
	Zones    []string `json:"zones"`
	Launched []string `json:"launched,omitempty"`
	// Fix says what to change, in the cloud's words.
	Fix string    `json:"fix,omitempty"`
	At  time.Time `json:"at"`
}
