package awsfake

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// On-Demand Capacity Reservations, as the EC2 API Reference
// (CreateCapacityReservation, DescribeCapacityReservations,
// CancelCapacityReservation) and the EC2 User Guide ("On-Demand Capacity
// Reservations") describe them, shaped as botocore's ec2 model
// (CapacityReservation). Modelled: a reservation of InstanceCount
// instances of a type in a zone, active at once (or
// InsufficientInstanceCapacity where SetNoCapacity took the zone's
// capacity away); "open" ones are used by any matching instance launched
// (type, zone, platform Linux/UNIX, default tenancy: "Instances that have
// matching attributes run in the Capacity Reservation automatically"),
// "targeted" ones by none here (the fake's launches name no reservation);
// an instance that ends gives its place back; cancelled ones keep their
// instances running, reserve nothing more, and are still described.
// Not modelled: platforms other than Linux/UNIX as launches' (any value
// of the enum is accepted and kept), dedicated tenancy, EndDate expiry,
// capacity blocks, fleets, placement groups, Outposts, sharing.

// reservation is one Capacity Reservation.
type reservation struct {
	id, typ, zone, platform, tenancy string
	match, endDateType, state, token string
	total, available                 int
	launched                         int // instances ever launched into it
	created                          time.Time
	endDate                          time.Time
	tags                             map[string]string
}

type reservationState struct {
	list       []*reservation
	byInstance map[string]*reservation // the reservation an instance runs in
}

// Reservation is a test's view of a Capacity Reservation.
type Reservation struct {
	ID, InstanceType, Zone, State, Match string
	Total, Available, Launched           int
	Tags                                 map[string]string
}

// Reservations are the Capacity Reservations, cancelled ones included,
// oldest first.
func (s *Server) Reservations() []Reservation {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Reservation, 0, len(s.capacity.reserved.list))
	for _, r := range s.capacity.reserved.list {
		out = append(out, Reservation{ID: r.id, InstanceType: r.typ, Zone: r.zone, State: r.state, Match: r.match,
			Total: r.total, Available: r.available, Launched: r.launched, Tags: maps.Clone(r.tags)})
	}
	return out
}

// openRoom is an active open reservation of typ in zone with a place
// free, nil if none.
func (s *Server) openRoom(zone, typ string) *reservation {
	for _, r := range s.capacity.reserved.list {
		if r.state == "active" && r.match == "open" && r.zone == zone && r.typ == typ &&
			r.platform == "Linux/UNIX" && r.tenancy == "default" && r.available > 0 {
			return r
		}
	}
	return nil
}

// reservedRoomLocked says a launch of typ in zone would run in an open
// reservation.
func (s *Server) reservedRoomLocked(zone, typ string) bool { return s.openRoom(zone, typ) != nil }

// reserveLaunchLocked places a launching instance in an open reservation
// that matches it, if one has room.
func (s *Server) reserveLaunchLocked(in *instance) {
	r := s.openRoom(in.Zone, in.InstanceType)
	if r == nil {
		return
	}
	r.available--
	r.launched++
	if s.capacity.reserved.byInstance == nil {
		s.capacity.reserved.byInstance = map[string]*reservation{}
	}
	s.capacity.reserved.byInstance[in.ID] = r
}

// unreserveLocked gives an ended instance's place back to its
// reservation, if it is still active.
func (s *Server) unreserveLocked(in *instance) {
	r := s.capacity.reserved.byInstance[in.ID]
	if r == nil {
		return
	}
	delete(s.capacity.reserved.byInstance, in.ID)
	if r.state == "active" {
		r.available++
	}
}

func (s *Server) reservationCall(action string, f form) ([]*node, bool, error) {
	switch action {
	case "CreateCapacityReservation":
		res, err := s.createReservation(f)
		return res, true, err
	case "DescribeCapacityReservations":
		res, err := s.describeReservations(f)
		return res, true, err
	case "CancelCapacityReservation":
		res, err := s.cancelReservation(f)
		return res, true, err
	}
	return nil, false, nil
}

// createReservation answers CreateCapacityReservation. Beyond the model's
// required members (checked before): "You must provide the
// AvailabilityZone or AvailabilityZoneId parameter" (zone IDs are not
// modelled: InvalidParameterValue); EndDate is required with EndDateType
// limited and refused with unlimited; InstanceCount at least 1;
// EndDateType defaults to unlimited, InstanceMatchCriteria to open,
// Tenancy to default; ClientToken makes a retry answer the first result.
func (s *Server) createReservation(f form) ([]*node, error) {
	if res, ok := s.remembered("CreateCapacityReservation", f.get("ClientToken")); ok {
		return []*node{capacityNode(res.(*reservation))}, nil
	}
	r, err := s.reservationArgs(f)
	if err != nil {
		return nil, err
	}
	if s.capacity.short[[2]string{r.zone, r.typ}] {
		return nil, ec2Err("InsufficientInstanceCapacity", "Insufficient capacity.")
	}
	s.seq++
	r.id = fmt.Sprintf("cr-%017x", s.idBase()+0x0c00000+uint64(s.seq))
	r.state, r.available, r.created = "active", r.total, time.Now().UTC()
	s.capacity.reserved.list = append(s.capacity.reserved.list, r)
	s.remember("CreateCapacityReservation", f.get("ClientToken"), r)
	s.notify()
	return []*node{capacityNode(r)}, nil
}

// reservationArgs reads a CreateCapacityReservation request.
func (s *Server) reservationArgs(f form) (*reservation, error) {
	n, err := strconv.Atoi(f.get("InstanceCount"))
	if err != nil || n < 1 {
		return nil, ec2Err("InvalidParameterValue", "The instance count must be at least 1.")
	}
	zone := f.get("AvailabilityZone")
	switch {
	case zone == "" && f.get("AvailabilityZoneId") == "":
		return nil, ec2Err("MissingParameter", "You must provide the AvailabilityZone or AvailabilityZoneId parameter.")
	case zone == "" || !zoneRE.MatchString(zone) || regionOfZone(zone) != s.opts.Region:
		return nil, ec2Err("InvalidParameterValue", "Invalid availability zone: [%s]", zone+f.get("AvailabilityZoneId"))
	}
	typ := f.get("InstanceType")
	if _, ok := instanceTypeVCPUs[typ]; !ok {
		return nil, ec2Err("InvalidParameterValue", "Invalid instance type %s", typ)
	}
	r := &reservation{typ: typ, zone: zone, platform: f.get("InstancePlatform"), total: n,
		tenancy: or(f.get("Tenancy"), "default"), match: or(f.get("InstanceMatchCriteria"), "open"),
		endDateType: or(f.get("EndDateType"), "unlimited"), token: f.get("ClientToken"), tags: map[string]string{}}
	if err := r.endArgs(f); err != nil {
		return nil, err
	}
	for i := 1; f.has("TagSpecifications." + strconv.Itoa(i) + ".ResourceType"); i++ {
		p := "TagSpecifications." + strconv.Itoa(i)
		if rt := f.get(p + ".ResourceType"); rt != "capacity-reservation" {
			return nil, ec2Err("InvalidParameterValue", "'%s' is not a valid taggable resource type for this operation.", rt)
		}
		for j := 1; f.has(p + ".Tag." + strconv.Itoa(j) + ".Key"); j++ {
			q := p + ".Tag." + strconv.Itoa(j)
			r.tags[f.get(q+".Key")] = f.get(q + ".Value")
		}
	}
	return r, nil
}

// endArgs reads EndDateType and EndDate: "You must provide an EndDate
// value if EndDateType is limited. You must omit EndDate if EndDateType
// is unlimited." (CreateCapacityReservation, EndDateType)
func (r *reservation) endArgs(f form) error {
	end := f.get("EndDate")
	switch {
	case r.endDateType == "limited" && end == "":
		return ec2Err("InvalidParameterCombination", "EndDate is required when EndDateType is limited.")
	case r.endDateType == "unlimited" && end != "":
		return ec2Err("InvalidParameterCombination", "EndDate must be omitted when EndDateType is unlimited.")
	case end != "":
		t, err := time.Parse(time.RFC3339, end)
		if err != nil || !t.After(time.Now()) {
			return ec2Err("InvalidParameterValue", "Invalid EndDate: %s", end)
		}
		r.endDate = t
	}
	return nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// describeReservations answers DescribeCapacityReservations: those of
// CapacityReservationId.N (an unknown one is
// InvalidCapacityReservationId.NotFound) or all, with the filters the
// fake's callers use of the reference's list: instance-type,
// availability-zone, state, instance-match-criteria, tag:<key>. One
// page: the fake's few reservations fit MaxResults' least.
func (s *Server) describeReservations(f form) ([]*node, error) {
	sel := slices.Clone(s.capacity.reserved.list)
	if ids := f.list("CapacityReservationId"); len(ids) > 0 {
		for _, id := range ids {
			if !slices.ContainsFunc(sel, func(r *reservation) bool { return r.id == id }) {
				return nil, ec2Err("InvalidCapacityReservationId.NotFound", "The capacity reservation ID '%s' does not exist", id)
			}
		}
		sel = slices.DeleteFunc(sel, func(r *reservation) bool { return !slices.Contains(ids, r.id) })
	}
	sel, err := filtered(f, sel, reservationField, anyWildcard)
	if err != nil {
		return nil, err
	}
	items := make([]*node, 0, len(sel))
	for _, r := range sel {
		items = append(items, capacityNode(r))
	}
	return []*node{list("capacityReservationSet", "item", items)}, nil
}

func reservationField(name string) (func(*reservation) string, bool) {
	switch name {
	case "instance-type":
		return func(r *reservation) string { return r.typ }, true
	case "availability-zone":
		return func(r *reservation) string { return r.zone }, true
	case "state":
		return func(r *reservation) string { return r.state }, true
	case "instance-match-criteria":
		return func(r *reservation) string { return r.match }, true
	}
	if key, ok := strings.CutPrefix(name, "tag:"); ok {
		return func(r *reservation) string { return r.tags[key] }, true
	}
	return nil, false
}

// cancelReservation answers CancelCapacityReservation: the reservation is
// cancelled ("the reserved capacity is released immediately"), its
// instances run on. Cancelling it again answers true once more (what EC2
// does then is not documented); an unknown ID is
// InvalidCapacityReservationId.NotFound.
func (s *Server) cancelReservation(f form) ([]*node, error) {
	id := f.get("CapacityReservationId")
	i := slices.IndexFunc(s.capacity.reserved.list, func(r *reservation) bool { return r.id == id })
	if i < 0 {
		return nil, ec2Err("InvalidCapacityReservationId.NotFound", "The capacity reservation ID '%s' does not exist", id)
	}
	r := s.capacity.reserved.list[i]
	r.state, r.available = "cancelled", 0
	s.notify()
	return []*node{txt("return", "true")}, nil
}

// capacityNode is botocore's CapacityReservation shape.
func capacityNode(r *reservation) *node {
	var tags []*node
	for _, k := range slices.Sorted(maps.Keys(r.tags)) {
		tags = append(tags, el("item", txt("key", k), txt("value", r.tags[k])))
	}
	n := el("capacityReservation",
		txt("capacityReservationId", r.id), txt("ownerId", "123456789012"),
		txt("capacityReservationArn", "arn:aws:ec2:"+regionOfZone(r.zone)+":123456789012:capacity-reservation/"+r.id),
		txt("instanceType", r.typ), txt("instancePlatform", r.platform), txt("availabilityZone", r.zone),
		txt("tenancy", r.tenancy), num("totalInstanceCount", r.total), num("availableInstanceCount", r.available),
		txt("state", r.state), txt("endDateType", r.endDateType), txt("instanceMatchCriteria", r.match),
		txt("createDate", r.created.Format(timeFormat)), txt("startDate", r.created.Format(timeFormat)),
		txt("reservationType", "default"), el("tagSet", tags...))
	if !r.endDate.IsZero() {
		n.add(txt("endDate", r.endDate.Format(timeFormat)))
	}
	return n
}
