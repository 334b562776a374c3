package snapshot

import (
	"encoding/binary"
	"errors"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// decodePod decodes the protobuf bytes of one whole pod (a list item as it
// comes off the wire) into p, a zeroed pod, as the generated Unmarshal,
// SlimPod and in.pod would leave it (TestDecodePodMatchesSlimmedUnmarshal,
// FuzzDecodePod), at a fraction of their cost: what SlimPod drops is
// skipped undecoded, slices are made at their size, strings are interned
// from the bytes (a string is made only for a value not seen yet), and the
// label maps and request lists of a pod whose entries were seen before are
// the interned ones without being decoded again.
//
// The hot fields are decoded here; every other field SlimPod keeps (the
// rare ones, and those added to the API later) is handed, one field at a
// time, to the generated Unmarshal of its message, which merges it into
// what was decoded here. Bytes this decoder does not mirror exactly (a
// message repeated where one is expected, a map entry overrunning its
// bounds, a broken encoding) are decoded whole by the generated Unmarshal
// instead, and slimmed and interned as before: the fast path never decides
// what an odd encoding means.
func (in *interner) decodePod(b []byte, p *corev1.Pod) error {
	if err := in.decodePodFast(b, p); err == nil {
		return nil
	}
	*p = corev1.Pod{}
	if err := p.Unmarshal(b); err != nil {
		return err
	}
	SlimPod(p)
	in.pod(p)
	return nil
}

// errIrregular is an encoding the fast path leaves to the generated
// decoder.
var errIrregular = errors.New("pod encoding left to the generated decoder")

// field is one field of a protobuf message, read as the generated
// decoders of k8s.io/api read it (their varints, lengths and skipping,
// which accept a little more than protowire does).
type field struct {
	num        protowire.Number
	typ        protowire.Type
	start, end int    // of the whole field in its message, tag included
	off        int    // where a length-delimited value starts
	v          uint64 // a varint's value
}

// uvarint reads a varint at b[i:] as the generated code does: at most ten
// bytes, the bits past 64 dropped. It returns the index after it.
func uvarint(b []byte, i int) (uint64, int, error) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if i >= len(b) {
			return 0, 0, io.ErrUnexpectedEOF
		}
		c := b[i]
		i++
		v |= uint64(c&0x7F) << shift
		if c < 0x80 {
			return v, i, nil
		}
	}
	return 0, 0, errIrregular
}

// read reads into f the field of message b at i. It fills a field of
// its caller's rather than returning one: a returned field is copied
// through memory, which cost more than the reading.
func (f *field) read(b []byte, i int) error {
	*f = field{start: i}
	var wire uint64
	var err error
	if wire, i, err = uvarint(b, i); err != nil {
		return err
	}
	num, typ := int32(wire>>3), protowire.Type(wire&7)
	if num <= 0 || typ == protowire.EndGroupType {
		return errIrregular
	}
	f.num, f.typ = protowire.Number(num), typ
	switch typ {
	case protowire.VarintType:
		f.v, i, err = uvarint(b, i)
	case protowire.Fixed64Type:
		i += 8
	case protowire.Fixed32Type:
		i += 4
	case protowire.BytesType:
		var n uint64
		n, i, err = uvarint(b, i)
		if err == nil && (int(n) < 0 || i+int(n) < 0 || i+int(n) > len(b)) {
			err = errIrregular
		}
		if err == nil {
			f.off = i
			i += int(n)
		}
	case protowire.StartGroupType:
		var n int
		if n, err = skipGenerated(b[f.start:]); err == nil {
			i = f.start + n
		}
	default:
		err = errIrregular
	}
	if err == nil && i > len(b) {
		err = io.ErrUnexpectedEOF
	}
	f.end = i
	return err
}

// scan appends the fields of message b to fs and returns it: a message
// whose fields are picked by number more than once (ObjectMeta, PodSpec)
// is read once.
func scan(fs []field, b []byte) ([]field, error) {
	for i := 0; i < len(b); i = fs[len(fs)-1].end {
		fs = append(fs, field{})
		if err := fs[len(fs)-1].read(b, i); err != nil {
			return nil, err
		}
	}
	return fs, nil
}

// bytes is the length-delimited value of the field of message b.
func (f *field) bytes(b []byte) ([]byte, error) {
	if f.typ != protowire.BytesType {
		return nil, errIrregular
	}
	return b[f.off:f.end], nil
}

// varint is the field's varint value.
func (f *field) varint() (uint64, error) {
	if f.typ != protowire.VarintType {
		return 0, errIrregular
	}
	return f.v, nil
}

// eachField calls fn with each field of message b in turn. The field is
// given by value: a pointer to eachField's own would move it to the heap.
// The loops that run for every pod (status, condition, the fields a
// container is interned by) read in place instead: a call a field costs
// them a tenth more.
func eachField(b []byte, fn func(f field) error) error {
	var f field
	for i := 0; i < len(b); i = f.end {
		if err := f.read(b, i); err != nil {
			return err
		}
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// fieldSet is a set of field numbers below 64, a bit each.
type fieldSet uint64

func (s fieldSet) has(num protowire.Number) bool { return s&(1<<uint(num)) != 0 } // 0 past 63

// scalars says how the decoder of one message takes its fields: those in
// strs are length-delimited values, those in varints numbers or bools,
// those in skipped are passed over (decoded apart, or what SlimPod drops),
// and any other is merged into the message by its generated Unmarshal.
type scalars struct {
	strs, varints, skipped fieldSet
}

// take reads field f of message b as s says: the value of a field in strs
// as v, in varints as n, with ok; a field skipped or merged by unmarshal
// is not ok. The caller's switch on f.num sets what is ok.
func (s scalars) take(b []byte, f *field, unmarshal func([]byte) error) (v []byte, n uint64, ok bool, err error) {
	switch {
	case s.strs.has(f.num):
		v, err = f.bytes(b)
	case s.varints.has(f.num):
		n, err = f.varint()
	case s.skipped.has(f.num):
		return nil, 0, false, nil
	default:
		return nil, 0, false, unmarshal(b[f.start:f.end])
	}
	return v, n, err == nil, err
}

// fields is the set of field numbers nums.
func fields(nums ...protowire.Number) fieldSet {
	var s fieldSet
	for _, n := range nums {
		s |= 1 << uint(n)
	}
	return s
}

// skipGenerated returns the length of the field at the start of b as the
// generated decoders skip an unknown field (a group's end need not match
// its start).
func skipGenerated(b []byte) (int, error) {
	depth := 0
	for i := 0; i < len(b); {
		wire, j, err := uvarint(b, i)
		if err != nil {
			return 0, err
		}
		i = j
		switch protowire.Type(wire & 7) {
		case protowire.VarintType:
			if _, i, err = uvarint(b, i); err != nil {
				return 0, err
			}
		case protowire.Fixed64Type:
			i += 8
		case protowire.BytesType:
			n, j, err := uvarint(b, i)
			if err != nil {
				return 0, err
			}
			if int(n) < 0 {
				return 0, errIrregular
			}
			i = j + int(n)
		case protowire.StartGroupType:
			depth++
		case protowire.EndGroupType:
			if depth == 0 {
				return 0, errIrregular
			}
			depth--
		case protowire.Fixed32Type:
			i += 4
		default:
			return 0, errIrregular
		}
		if i < 0 {
			return 0, errIrregular
		}
		if depth == 0 {
			return i, nil
		}
	}
	return 0, io.ErrUnexpectedEOF
}

// sb returns the interned string with b's bytes, making one only for a
// value not seen yet.
func (in *interner) sb(b []byte) string {
	if len(b) == 0 {
		return "" // nothing to share: no lookup
	}
	if c, ok := in.strs[string(b)]; ok {
		return c
	}
	s := string(b)
	in.strs[s] = s
	return s
}

func (in *interner) decodePodFast(b []byte, p *corev1.Pod) error {
	var seen [4]bool
	return eachField(b, func(f field) error {
		if f.num < 1 || f.num > 3 || seen[f.num] {
			return errIrregular // a message given twice is merged: left to Unmarshal
		}
		seen[f.num] = true
		v, err := f.bytes(b)
		if err != nil {
			return err
		}
		switch f.num {
		case 1:
			return in.decodeMeta(v, &p.ObjectMeta)
		case 2:
			return in.decodeSpec(v, &p.Spec)
		}
		return in.decodeStatus(v, &p.Status)
	})
}

// decodeMeta decodes an ObjectMeta as Unmarshal and slimMeta leave it.
func (in *interner) decodeMeta(b []byte, m *metav1.ObjectMeta) error {
	var buf [32]field // a pod's metadata has about 20, more with many labels
	fs, err := scan(buf[:0], b)
	if err != nil {
		return err
	}
	var finalizers int
	var labels, annotations bool
	for i := range fs {
		switch fs[i].num {
		case 11:
			labels = true
		case 12:
			annotations = true
		case 14:
			finalizers++
		}
	}
	if m.OwnerReferences, err = repeated(in, in.owners, b, fs, 13, nil, 0, in.decodeOwner); err != nil {
		return err
	}
	if finalizers > 0 {
		m.Finalizers = make([]string, 0, finalizers)
	}
	for i := range fs {
		if err := in.metaField(b, &fs[i], m); err != nil {
			return err
		}
	}
	if labels {
		if m.Labels, err = in.mapField(b, fs, 11, false); err != nil {
			return err
		}
	}
	if annotations {
		if m.Annotations, err = in.mapField(b, fs, 12, true); err != nil {
			return err
		}
	}
	return nil
}

// metaScalars are how metaField takes the fields of an ObjectMeta: labels,
// annotations and owners are decoded apart, managedFields dropped.
var metaScalars = scalars{strs: fields(1, 2, 3, 5, 6, 8, 9, 14), varints: fields(7, 10), skipped: fields(11, 12, 13, 17)}

// metaField decodes field f of ObjectMeta b into m, but for labels,
// annotations and owners, which decodeMeta decodes apart.
func (in *interner) metaField(b []byte, f *field, m *metav1.ObjectMeta) error {
	v, n, ok, err := metaScalars.take(b, f, m.Unmarshal)
	if !ok {
		return err
	}
	switch f.num {
	case 1:
		m.Name = string(v)
	case 2:
		m.GenerateName = in.sb(v)
	case 3:
		m.Namespace = in.sb(v)
	case 5:
		m.UID = types.UID(v)
	case 6:
		m.ResourceVersion = string(v)
	case 7:
		m.Generation = int64(n)
	case 8:
		return m.CreationTimestamp.Unmarshal(v)
	case 9:
		if m.DeletionTimestamp == nil {
			m.DeletionTimestamp = &metav1.Time{}
		}
		return m.DeletionTimestamp.Unmarshal(v)
	case 10:
		seconds := int64(n)
		m.DeletionGracePeriodSeconds = &seconds
	case 14:
		m.Finalizers = append(m.Finalizers, string(v))
	}
	return nil
}

var ownerScalars = scalars{strs: fields(1, 3, 4, 5), varints: fields(6, 7)}

func (in *interner) decodeOwner(b []byte, r *metav1.OwnerReference) error {
	return eachField(b, func(f field) error {
		v, n, ok, err := ownerScalars.take(b, &f, r.Unmarshal)
		if !ok {
			return err
		}
		switch f.num {
		case 1:
			r.Kind = in.sb(v)
		case 3:
			r.Name = in.sb(v)
		case 4:
			r.UID = types.UID(in.sb(v))
		case 5:
			r.APIVersion = in.sb(v)
		case 6:
			set := n != 0
			r.Controller = &set
		case 7:
			set := n != 0
			r.BlockOwnerDeletion = &set
		}
		return nil
	})
}

// entryKey returns the key of a map entry as the generated decoder reads
// it; an entry whose key or value reaches past the entry (which the
// generated decoder reads from the bytes that follow) is left to it.
func entryKey(e []byte) ([]byte, error) {
	var key []byte
	for i := 0; i < len(e); {
		wire, j, err := uvarint(e, i)
		if err != nil {
			return nil, err
		}
		if num := int32(wire >> 3); num == 1 || num == 2 {
			n, j, err := uvarint(e, j)
			if err != nil {
				return nil, err
			}
			end := j + int(n)
			if int(n) < 0 || end < 0 || end > len(e) {
				return nil, errIrregular
			}
			if num == 1 {
				key = e[j:end]
			}
			i = end
			continue
		}
		n, err := skipGenerated(e[i:])
		if err != nil || i+n > len(e) {
			return nil, errIrregular
		}
		i += n
	}
	return key, nil
}

// mapEntries puts in in.raw the entries of map field num among the fields
// fs of message b, each after its length, the kubectl last-applied one
// left out when dropLastApplied: the key under which what they decode to
// is interned. It says whether there is any entry.
func (in *interner) mapEntries(b []byte, fs []field, num protowire.Number, dropLastApplied bool) (bool, error) {
	in.raw = in.raw[:0]
	found := false
	for i := range fs {
		if fs[i].num != num {
			continue
		}
		e, err := fs[i].bytes(b)
		if err != nil {
			return false, err
		}
		key, err := entryKey(e)
		if err != nil {
			return false, err
		}
		found = true
		if dropLastApplied && string(key) == lastApplied {
			continue
		}
		in.raw = protowire.AppendBytes(in.raw, e)
	}
	return found, nil
}

// entriesAs makes in.scratch a message of the entries in in.raw as field
// num.
func (in *interner) entriesAs(num protowire.Number) {
	in.scratch = in.scratch[:0]
	for r := in.raw; len(r) > 0; {
		e, n := protowire.ConsumeBytes(r)
		in.scratch = protowire.AppendBytes(protowire.AppendTag(in.scratch, num, protowire.BytesType), e)
		r = r[n:]
	}
}

// mapField returns the interned map<string, string> of field num among
// the fields fs of message b (labels, annotations, a node selector), nil
// when it has no entry.
func (in *interner) mapField(b []byte, fs []field, num protowire.Number, dropLastApplied bool) (map[string]string, error) {
	if ok, err := in.mapEntries(b, fs, num, dropLastApplied); !ok || err != nil {
		return nil, err
	}
	if m, ok := in.rawMaps[string(in.raw)]; ok {
		return m, nil
	}
	// decoded as labels: every map<string, string> decodes alike
	in.entriesAs(11)
	var om metav1.ObjectMeta
	if err := om.Unmarshal(in.scratch); err != nil {
		return nil, err
	}
	if om.Labels == nil {
		om.Labels = map[string]string{} // only last-applied: slimMeta leaves an empty map
	}
	m := in.strings(om.Labels)
	in.rawMaps[string(in.raw)] = m
	return m, nil
}

// requests returns the interned requests of a container's resources b.
func (in *interner) requests(b []byte) (corev1.ResourceList, error) {
	var buf [8]field // each entry of limits and requests is a field
	fs, err := scan(buf[:0], b)
	if err != nil {
		return nil, err
	}
	if ok, err := in.mapEntries(b, fs, 2, false); !ok || err != nil {
		return nil, err
	}
	if rl, ok := in.rawReqs[string(in.raw)]; ok {
		return rl, nil
	}
	in.entriesAs(2)
	var rr corev1.ResourceRequirements
	if err := rr.Unmarshal(in.scratch); err != nil {
		return nil, err
	}
	rl := in.resources(rr.Requests)
	in.rawReqs[string(in.raw)] = rl
	return rl, nil
}

// decodeSpec decodes a PodSpec as Unmarshal and SlimPod leave it.
func (in *interner) decodeSpec(b []byte, sp *corev1.PodSpec) error {
	var buf [64]field // a pod's spec has about 20, more with many volumes or tolerations
	fs, err := scan(buf[:0], b)
	if err != nil {
		return err
	}
	if sp.Volumes, err = repeated(in, in.volumes, b, fs, 1, volumeKept, 0, in.decodeVolume); err != nil {
		return err
	}
	if sp.Containers, err = repeated(in, in.containers, b, fs, 2, nil, containerFields, in.decodeContainer); err != nil {
		return err
	}
	if sp.InitContainers, err = repeated(in, in.containers, b, fs, 20, nil, containerFields, in.decodeContainer); err != nil {
		return err
	}
	if sp.Tolerations, err = repeated(in, in.tolerations, b, fs, 22, nil, 0, in.decodeToleration); err != nil {
		return err
	}
	if sp.Affinity, err = in.affinity(b, fs); err != nil {
		return err
	}
	selector := false
	for i := range fs {
		if fs[i].num == 7 { // the node selector below
			selector = true
		}
		if err := in.specField(b, &fs[i], sp); err != nil {
			return err
		}
	}
	if selector {
		if sp.NodeSelector, err = in.mapField(b, fs, 7, false); err != nil {
			return err
		}
	}
	dropPodSpec(sp)
	return nil
}

// specScalars are how specField takes the fields of a PodSpec: those
// decodeSpec decodes apart and those SlimPod drops (dropPodSpec) skipped.
var specScalars = scalars{
	varints: fields(4, 25, 11, 12, 13, 21, 27, 30, 35, 37),
	strs:    fields(3, 6, 8, 9, 10, 16, 17, 19, 24, 31),
	skipped: fields(1, 2, 7, 18, 20, 22, 14, 15, 23, 26, 33, 34, 39),
}

// specField decodes field f of PodSpec b into sp, but for those
// decodeSpec decodes apart and those SlimPod drops.
func (in *interner) specField(b []byte, f *field, sp *corev1.PodSpec) error {
	v, n, ok, err := specScalars.take(b, f, sp.Unmarshal)
	switch {
	case !ok:
		return err
	case specScalars.varints.has(f.num):
		in.specVarint(f.num, n, sp)
	default:
		in.specString(f.num, v, sp)
	}
	return nil
}

// specVarint sets PodSpec field num, a number or a bool, to v; the
// pointers are the interner's, shared by the snapshot's pods.
func (in *interner) specVarint(num protowire.Number, v uint64, sp *corev1.PodSpec) {
	switch num {
	case 4:
		sp.TerminationGracePeriodSeconds = pointerTo(in.int64s, int64(v))
	case 25:
		sp.Priority = pointerTo(in.int32s, int32(v))
	case 11:
		sp.HostNetwork = v != 0
	case 12:
		sp.HostPID = v != 0
	case 13:
		sp.HostIPC = v != 0
	case 21:
		sp.AutomountServiceAccountToken = in.boolPointer(v)
	case 27:
		sp.ShareProcessNamespace = in.boolPointer(v)
	case 30:
		sp.EnableServiceLinks = in.boolPointer(v)
	case 35:
		sp.SetHostnameAsFQDN = in.boolPointer(v)
	case 37:
		sp.HostUsers = in.boolPointer(v)
	}
}

// specString sets PodSpec field num, a string, to v, interned.
func (in *interner) specString(num protowire.Number, v []byte, sp *corev1.PodSpec) {
	switch num {
	case 3:
		sp.RestartPolicy = corev1.RestartPolicy(in.sb(v))
	case 6:
		sp.DNSPolicy = corev1.DNSPolicy(in.sb(v))
	case 8:
		sp.ServiceAccountName = in.sb(v)
	case 9:
		sp.DeprecatedServiceAccount = in.sb(v)
	case 10:
		sp.NodeName = in.sb(v)
	case 19:
		sp.SchedulerName = in.sb(v)
	case 24:
		sp.PriorityClassName = in.sb(v)
	case 16:
		sp.Hostname = in.sb(v)
	case 17:
		sp.Subdomain = in.sb(v)
	case 31:
		p, ok := in.preemptions[string(v)] // no string made for the lookup
		if !ok {
			p = new(corev1.PreemptionPolicy(v))
			in.preemptions[string(v)] = p
		}
		sp.PreemptionPolicy = p
	}
}

// pointerTo returns the one pointer to v in seen, which the pods of a
// snapshot share (nothing changes them).
func pointerTo[T comparable](seen map[T]*T, v T) *T {
	if p, ok := seen[v]; ok {
		return p
	}
	p := new(v)
	seen[v] = p
	return p
}

// boolPointer is the one pointer to a bool decoded from varint v, as the
// generated decoder reads a bool.
func (in *interner) boolPointer(v uint64) *bool {
	if v != 0 {
		return in.bools[1]
	}
	return in.bools[0]
}

// decodeAffinity merges into sp the required node affinity of an
// affinity, the only part SlimPod keeps.
func decodeAffinity(b []byte, sp *corev1.PodSpec) error {
	return eachValueOf(b, 1, func(nodeAffinity []byte) error {
		return eachValueOf(nodeAffinity, 1, func(v []byte) error {
			if sp.Affinity == nil {
				sp.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
			}
			return sp.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.Unmarshal(v)
		})
	})
}

// eachValueOf calls fn with each value of length-delimited field num of
// message b.
func eachValueOf(b []byte, num protowire.Number, fn func(v []byte) error) error {
	return eachField(b, func(f field) error {
		if f.num != num {
			return nil
		}
		v, err := f.bytes(b)
		if err != nil {
			return err
		}
		return fn(v)
	})
}

// affinity returns the interned affinity of the affinity fields among the
// fields fs of PodSpec b, nil when it has none: only its required node
// affinity, which SlimPod keeps.
func (in *interner) affinity(b []byte, fs []field) (*corev1.Affinity, error) {
	found, err := in.values(b, fs, 18, nil, 0)
	if err != nil || found == 0 {
		return nil, err
	}
	if a, ok := in.affinities[string(in.raw)]; ok {
		return a, nil
	}
	key := string(in.raw)
	var sp corev1.PodSpec
	if err := eachValue(b, fs, 18, nil, func(v []byte) error { return decodeAffinity(v, &sp) }); err != nil {
		return nil, err
	}
	in.affinities[key] = sp.Affinity
	return sp.Affinity, nil
}

// eachValue calls fn with each value of length-delimited field num among
// the fields fs of message b that keep accepts (all when keep is nil).
func eachValue(b []byte, fs []field, num protowire.Number, keep func([]byte) (bool, error), fn func(v []byte) error) error {
	for i := range fs {
		if fs[i].num != num {
			continue
		}
		v, err := fs[i].bytes(b)
		if err != nil {
			return err
		}
		if keep != nil {
			kept, err := keep(v)
			if err != nil {
				return err
			}
			if !kept {
				continue
			}
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	return nil
}

// values puts in in.raw the values eachValue gives, each after its
// length, and says how many there are.
//
// With decoded not 0, a value stands in in.raw only by the fields its
// decoder reads (those numbered by a bit of decoded): the containers of a
// Deployment's pods differ on the wire, where the API server names each
// pod's service account token volume and its mounts anew
// (kube-api-access-xxxxx), but not in what the plan keeps of them, so
// they are decoded once and shared, and no key holds what is left out.
func (in *interner) values(b []byte, fs []field, num protowire.Number, keep func([]byte) (bool, error), decoded uint64) (int, error) {
	in.raw = in.raw[:0]
	n := 0
	err := eachValue(b, fs, num, keep, func(v []byte) error {
		n++
		if decoded == 0 {
			in.raw = protowire.AppendBytes(in.raw, v)
			return nil
		}
		// the length of what is picked comes first, so values cannot run
		// into each other: 4 bytes make room for it before it is known
		at := len(in.raw)
		in.raw = append(in.raw, 0, 0, 0, 0)
		var f field
		for i := 0; i < len(v); i = f.end {
			if err := f.read(v, i); err != nil {
				return err
			}
			if fieldSet(decoded).has(f.num) {
				in.raw = append(in.raw, v[f.start:f.end]...)
			}
		}
		binary.LittleEndian.PutUint32(in.raw[at:], uint32(len(in.raw)-at-4))
		return nil
	})
	return n, err
}

// repeated returns the interned slice of the values of repeated field num
// among the fields fs of message b that keep accepts (all when keep is
// nil), each decoded by dec into a zeroed T, nil when there is none;
// decoded, when not 0, says which fields of a value dec reads (see
// values). The pods of a workload have the same tolerations, owners and
// kept volumes byte for byte, and the same containers in the fields
// decoded: they are decoded for the first pod and shared by the others.
func repeated[T any](in *interner, seen map[string][]T, b []byte, fs []field, num protowire.Number, keep func([]byte) (bool, error), decoded uint64, dec func([]byte, *T) error) ([]T, error) {
	n, err := in.values(b, fs, num, keep, decoded)
	if err != nil || n == 0 {
		return nil, err
	}
	if s, ok := seen[string(in.raw)]; ok {
		return s, nil
	}
	key := string(in.raw) // dec may reuse in.raw
	s := make([]T, 0, n)
	err = eachValue(b, fs, num, keep, func(v []byte) error {
		s = append(s, *new(T))
		return dec(v, &s[len(s)-1])
	})
	if err != nil {
		return nil, err
	}
	seen[key] = s
	return s, nil
}

// volumeSource says whether num is one of the sources of a volume slimVolumes keeps: emptyDir,
// persistentVolumeClaim, ephemeral.
func volumeSource(num protowire.Number) bool { return num == 2 || num == 10 || num == 29 }

// volumeKept says whether slimVolumes keeps the volume b.
func volumeKept(b []byte) (bool, error) {
	kept := false
	err := eachValueOf(b, 2, func(src []byte) error {
		return eachField(src, func(sf field) error {
			kept = kept || volumeSource(sf.num)
			return nil
		})
	})
	return kept, err
}

// decodeVolume decodes a volume as slimVolumes keeps it.
func (in *interner) decodeVolume(b []byte, vol *corev1.Volume) error {
	sources := 0
	var name []byte
	err := eachField(b, func(f field) error {
		if f.num != 1 && f.num != 2 {
			return nil
		}
		v, err := f.bytes(b)
		if err != nil {
			return err
		}
		if f.num == 1 {
			name = v
			return nil
		}
		if sources++; sources > 1 {
			return errIrregular // merged sources: left to Unmarshal
		}
		return decodeVolumeSource(v, &vol.VolumeSource)
	})
	vol.Name = in.sb(name)
	return err
}

// decodeVolumeSource decodes the sources of volume source b that
// slimVolumes keeps into src.
func decodeVolumeSource(b []byte, src *corev1.VolumeSource) error {
	return eachField(b, func(f field) error {
		if !volumeSource(f.num) {
			return nil
		}
		v, err := f.bytes(b)
		if err != nil {
			return err
		}
		switch f.num {
		case 2:
			if src.EmptyDir == nil {
				src.EmptyDir = &corev1.EmptyDirVolumeSource{}
			}
			return src.EmptyDir.Unmarshal(v)
		case 10:
			if src.PersistentVolumeClaim == nil {
				src.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{}
			}
			return src.PersistentVolumeClaim.Unmarshal(v)
		}
		if src.Ephemeral == nil {
			src.Ephemeral = &corev1.EphemeralVolumeSource{}
		}
		return src.Ephemeral.Unmarshal(v)
	})
}

// containerFields are the fields of a Container decodeContainer reads, a
// bit each: name, resources, readinessProbe, lifecycle, restartPolicy.
const containerFields uint64 = 1<<1 | 1<<8 | 1<<11 | 1<<12 | 1<<24

// decodeContainer decodes a container as slimContainers keeps it.
func (in *interner) decodeContainer(b []byte, c *corev1.Container) error {
	resources := false
	return eachField(b, func(f field) error {
		if !fieldSet(containerFields).has(f.num) {
			return nil
		}
		v, err := f.bytes(b)
		if err != nil {
			return err
		}
		switch f.num {
		case 1:
			c.Name = in.sb(v)
		case 8:
			if resources {
				return errIrregular // merged resources: left to Unmarshal
			}
			resources = true
			c.Resources.Requests, err = in.requests(v)
		case 11:
			if c.ReadinessProbe == nil {
				c.ReadinessProbe = &corev1.Probe{}
			}
			err = c.ReadinessProbe.Unmarshal(v)
		case 12:
			if c.Lifecycle == nil {
				c.Lifecycle = &corev1.Lifecycle{}
			}
			err = c.Lifecycle.Unmarshal(v)
		case 24:
			p := corev1.ContainerRestartPolicy(v)
			c.RestartPolicy = &p
		}
		return err
	})
}

var tolerationScalars = scalars{strs: fields(1, 2, 3, 4), varints: fields(5)}

func (in *interner) decodeToleration(b []byte, t *corev1.Toleration) error {
	return eachField(b, func(f field) error {
		v, n, ok, err := tolerationScalars.take(b, &f, t.Unmarshal)
		if !ok {
			return err
		}
		switch f.num {
		case 1:
			t.Key = in.sb(v)
		case 2:
			t.Operator = corev1.TolerationOperator(in.sb(v))
		case 3:
			t.Value = in.sb(v)
		case 4:
			t.Effect = corev1.TaintEffect(in.sb(v))
		case 5:
			seconds := int64(n)
			t.TolerationSeconds = &seconds
		}
		return nil
	})
}

// statusScalars are how decodeStatus takes the fields of a PodStatus:
// what SlimPod drops (dropPodStatus) skipped; 7 startTime stays.
var statusScalars = scalars{strs: fields(1, 2, 9), skipped: fields(3, 5, 6, 8, 10, 12, 13, 15, 16)}

// decodeStatus decodes a PodStatus as Unmarshal and SlimPod leave it.
func (in *interner) decodeStatus(b []byte, st *corev1.PodStatus) error {
	var ready []byte
	isReady := false
	var f field // read in place, not by eachField: this runs for every pod
	for i := 0; i < len(b); i = f.end {
		if err := f.read(b, i); err != nil {
			return err
		}
		v, _, ok, err := statusScalars.take(b, &f, st.Unmarshal)
		if !ok {
			if err != nil {
				return err
			}
			continue
		}
		switch f.num {
		case 1:
			st.Phase = corev1.PodPhase(in.sb(v))
		case 9:
			st.QOSClass = corev1.PodQOSClass(in.sb(v))
		case 2:
			typ, status, err := condition(v)
			if err != nil {
				return err
			}
			if string(typ) == string(corev1.PodReady) {
				ready, isReady = status, true
			}
		}
	}
	if isReady {
		c, ok := in.ready[string(ready)]
		if !ok {
			c = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionStatus(in.sb(ready))}}
			in.ready[string(ready)] = c
		}
		st.Conditions = c
	}
	dropPodStatus(st)
	return nil
}

// condition returns the type and status of a pod condition.
func condition(b []byte) (typ, status []byte, err error) {
	var f field
	for i := 0; i < len(b); i = f.end {
		if err := f.read(b, i); err != nil {
			return nil, nil, err
		}
		switch f.num {
		case 1:
			typ, err = f.bytes(b)
		case 2:
			status, err = f.bytes(b)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return typ, status, nil
}
