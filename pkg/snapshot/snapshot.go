// Package snapshot lists the cluster once for planning: every kind the plan
// reads, each in pages read side by side, decoded straight to the slimmed,
// interned objects planning and the audit read, so that a 150,000-pod
// cluster is held in a fraction of its size.
package snapshot

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/encoding/protowire"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// Cluster is the cluster as listed once at the start of planning.
type Cluster struct {
	Nodes        []corev1.Node
	Pods         []corev1.Pod
	PDBs         []policyv1.PodDisruptionBudget
	ReplicaSets  []appsv1.ReplicaSet
	Deployments  []appsv1.Deployment
	StatefulSets []appsv1.StatefulSet
	Services     []corev1.Service
	Namespaces   []corev1.Namespace
	// Claims and volumes say where a pod's persistent volumes let it run.
	PVCs []corev1.PersistentVolumeClaim
	PVs  []corev1.PersistentVolume
}

// listPageSize is the page of a list. The apiserver serves pages from its
// watch cache (ListFromCacheSnapshot, 1.34+), so a page costs encoding, not
// an etcd range read: big pages need few round trips, and the client
// holds a few pages' slimmed items at a time (listPages), never a page of
// whole objects.
const listPageSize = 5000

// Take lists each kind the plan needs once, all kinds at the same
// time, a few pages of each side by side (listPages). Pods, nodes and the
// workload controllers are slimmed as they are decoded to the fields
// planning and the audit read (see SlimPod), so a 150,000-pod cluster is
// held in a fraction of its size; protobuf pods are decoded straight to
// their slimmed, interned form (decodePod), nodes and controllers with
// what their slim functions drop left undecoded (nodeWire, templateWire,
// statefulSetWire). A list whose continue token expires (410, when
// listing outlasts etcd compaction) is made again in one piece.
//
// nodesListed, when not nil, is called with the nodes as soon as they are
// listed, while the other kinds still are: an error from it ends the
// snapshot at once and is returned as it is. What the nodes alone decide
// (no such node group, no target) is refused in the second the nodes take
// to list, not after the pods' many seconds.
func Take(ctx context.Context, client kubernetes.Interface, nodesListed func([]corev1.Node) error) (Cluster, error) {
	var s Cluster
	steps := append([]func(context.Context) error{s.listNodes(client, nodesListed), s.listPods(client)}, s.listOthers(client)...)
	// One at a time, the small lists would wait behind the pods' pages for
	// nothing; each step writes its own field of s.
	err := runAll(ctx, steps)
	// s is read after runAll returns: in "return s, runAll(…)" Go may read
	// it first
	return s, err
}

// listNodes returns the step that lists the nodes into s and passes them
// to nodesListed, when not nil.
func (s *Cluster) listNodes(client kubernetes.Interface, nodesListed func([]corev1.Node) error) func(context.Context) error {
	core := client.CoreV1()
	return func(ctx context.Context) error {
		err := listInto(ctx, "nodes", &s.Nodes, slimNode, listSource{core.RESTClient(), "", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return core.Nodes().List(ctx, o)
		}, nodeWire, nil})
		if err != nil || nodesListed == nil {
			return err
		}
		return nodesListed(s.Nodes)
	}
}

// listPods returns the step that lists the pods that have not finished
// into s: finished pods are never evicted, and leaving them out keeps the
// list small.
func (s *Cluster) listPods(client kubernetes.Interface) func(context.Context) error {
	const runningPods = "status.phase!=Succeeded,status.phase!=Failed"
	core := client.CoreV1()
	return func(ctx context.Context) error {
		// JSON pages are read one at a time (their continue token
		// comes with the whole page), so they share one interner
		in := newInterner()
		slim := func(p *corev1.Pod) { SlimPod(p); in.pod(p) }
		return listInto(ctx, "pods", &s.Pods, slim, listSource{rest: core.RESTClient(), fieldSelector: runningPods, typed: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return core.Pods("").List(ctx, o)
		}, newDecoder: func() func([]byte, *corev1.Pod) error { return newInterner().decodePod }})
	}
}

// listOthers returns the steps that list the other kinds into s.
func (s *Cluster) listOthers(client kubernetes.Interface) []func(context.Context) error {
	core, apps, policy := client.CoreV1(), client.AppsV1(), client.PolicyV1()
	return []func(context.Context) error{
		listStep("poddisruptionbudgets", &s.PDBs, nil, policy.RESTClient(), nil, policy.PodDisruptionBudgets("").List),
		listStep("replicasets", &s.ReplicaSets, slimReplicaSet, apps.RESTClient(), templateWire, apps.ReplicaSets("").List),
		listStep("deployments", &s.Deployments, slimDeployment, apps.RESTClient(), templateWire, apps.Deployments("").List),
		listStep("statefulsets", &s.StatefulSets, slimStatefulSet, apps.RESTClient(), statefulSetWire, apps.StatefulSets("").List),
		listStep("services", &s.Services, nil, core.RESTClient(), nil, core.Services("").List),
		listStep("namespaces", &s.Namespaces, nil, core.RESTClient(), nil, core.Namespaces().List),
		listStep("persistentvolumeclaims", &s.PVCs, slimClaim, core.RESTClient(), nil, core.PersistentVolumeClaims("").List),
		listStep("persistentvolumes", &s.PVs, slimVolume, core.RESTClient(), nil, core.PersistentVolumes().List),
	}
}

// listStep returns a step that lists resource into into with listInto,
// through rc, or typed where rc is not a REST client.
func listStep[T any, PT protoItem[T], L runtime.Object](resource string, into *[]T, slim func(*T), rc rest.Interface, wire *wireFilter,
	typed func(context.Context, metav1.ListOptions) (L, error)) func(context.Context) error {
	list := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return typed(ctx, o) }
	return func(ctx context.Context) error {
		return listInto[T, PT](ctx, resource, into, slim, listSource{rest: rc, typed: list, wire: wire})
	}
}

// runAll runs the steps at the same time. The first step to fail cancels
// the others, and its error is the one returned, not the cancellations it
// caused in the others: a refused connection must not read as an
// interruption. When the caller's ctx ends first, its cause is returned.
func runAll(ctx context.Context, steps []func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var failed atomic.Bool
	var wg sync.WaitGroup
	for _, step := range steps {
		wg.Go(func() {
			if err := step(ctx); err != nil {
				failed.Store(true)
				// only the first cause is kept: later calls find ctx done
				cancel(err)
			}
		})
	}
	wg.Wait()
	if !failed.Load() {
		return nil
	}
	return context.Cause(ctx)
}

// listPage is one call of a typed List.
type listPage func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error)

// listSource is where a kind is listed from: its group's REST client, the
// field selector of the list, and the typed List, used where there is no
// REST client (the fake clientset of tests).
type listSource struct {
	rest          rest.Interface
	fieldSelector string
	typed         listPage
	wire          *wireFilter // fields left out of each protobuf item before it is decoded; may be nil
	// newDecoder, when not nil, is a func() func([]byte, *T) error for the
	// list's item type T: it makes a decoder for the pages read on one
	// goroutine, which decodes each protobuf item (all of its bytes, wire
	// not applied) into a zeroed *T already slimmed, in place of
	// Unmarshal and slim (pods: interner.decodePod, an interner each).
	newDecoder any
}

// sizeHint returns how many items the list will hold at most, or 0 when
// unknown: a filtered list's pages do not say how many items remain, so
// a list of one unfiltered item is asked first (served from the API
// server's watch cache), whose remaining count bounds the filtered list.
// Without it, the slice of 150,000 pods (1.2 KB each before what they
// point to) would be grown a quarter at a time, copied each time, and
// held twice at the end.
func (src listSource) sizeHint(ctx context.Context) int {
	if src.fieldSelector == "" || src.typed == nil {
		return 0
	}
	obj, err := src.typed(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0 // the list itself will say what is wrong
	}
	m, err := meta.ListAccessor(obj)
	if err != nil || m.GetRemainingItemCount() == nil {
		return 0
	}
	return 1 + int(*m.GetRemainingItemCount())
}

// protoItem is a generated API type: *corev1.Pod and the like.
type protoItem[T any] interface {
	*T
	Unmarshal([]byte) error
}

// listInto appends every item of a paginated list to into, each passed
// through slim (when not nil) as soon as it is decoded.
//
// Through a REST client, each page's protobuf items are decoded one by one
// as the page streams in (fetchPage), by src.newDecoder's decoder when
// set, else by Unmarshal (after src.wire) and slim: client-go's typed List
// would grow a buffer for every page, copy the page once more into its
// envelope and grow the page's slice of whole items, a third of the
// snapshot's CPU at 30,000 pods (BenchmarkTake), and hold a page
// of whole items at a time. Pages are read side by side (listPages).
func listInto[T any, PT protoItem[T]](ctx context.Context, resource string, into *[]T, slim func(*T), src listSource) error {
	read, pageSize, err := pageReader[T, PT](ctx, resource, into, slim, src)
	if err != nil {
		return fmt.Errorf("listing %s: %w", resource, err)
	}
	fetch := func(ctx context.Context, sl *pageSlot[T], o metav1.ListOptions, next func(string)) error {
		sl.items, sl.remaining = sl.items[:0], nil
		if sl.items == nil && pageSize > 0 {
			sl.items = make([]T, 0, pageSize)
		}
		return read(ctx, sl, o, next)
	}
	commit := func(sl *pageSlot[T], last bool) { sl.commitTo(into, last) }
	slots := make([]pageSlot[T], pagesAtOnce())
	restart := func() { *into = (*into)[:0] }
	err = relisting(ctx, resource, func() error { return listPages(ctx, src.fieldSelector, slots, fetch, commit, restart) }, restart)
	if err != nil {
		return fmt.Errorf("listing %s: %w", resource, err)
	}
	return nil
}

// pageRead reads one page of a list into a slot, as listPages' fetch.
type pageRead[T any] func(ctx context.Context, sl *pageSlot[T], o metav1.ListOptions, next func(string)) error

// pageReader returns how listInto reads a page: streamed through src's
// REST client (fetchPage), or by the typed List where there is none; and
// the size of a page's items when known, so as not to grow them. Through
// the REST client, into is made as large as the list will be, when the
// size hint says it.
func pageReader[T any, PT protoItem[T]](ctx context.Context, resource string, into *[]T, slim func(*T), src listSource) (pageRead[T], int, error) {
	var newDecoder func() func([]byte, *T) error
	if src.newDecoder != nil {
		var ok bool
		if newDecoder, ok = src.newDecoder.(func() func([]byte, *T) error); !ok {
			return nil, 0, fmt.Errorf("a %T cannot decode a %T", src.newDecoder, PT(nil))
		}
	}
	rc, ok := src.rest.(*rest.RESTClient)
	if !ok || rc == nil {
		return func(ctx context.Context, sl *pageSlot[T], o metav1.ListOptions, next func(string)) error {
			obj, err := src.typed(ctx, o)
			if err != nil {
				return err
			}
			return sl.add(obj, resource, slim, next)
		}, 0, nil
	}
	pageSize := 0
	if n := src.sizeHint(ctx); n > 0 {
		*into = make([]T, 0, n)
		adviseHugePagesFor(*into)
		pageSize = min(n, listPageSize)
	}
	return func(ctx context.Context, sl *pageSlot[T], o metav1.ListOptions, next func(string)) error {
		if sl.decode == nil && newDecoder != nil {
			sl.decode = newDecoder()
		}
		return fetchPage[T, PT](ctx, rc, resource, o, sl, src.wire, slim, next)
	}, pageSize, nil
}

// commitTo appends the slot's items to into, the list so far.
func (sl *pageSlot[T]) commitTo(into *[]T, last bool) {
	if *into == nil {
		if last {
			// the one page: its items are the list
			*into, sl.items = sl.items, nil
			return
		}
		// the first page often says how many items the list has
		if sl.remaining != nil {
			*into = make([]T, 0, len(sl.items)+int(*sl.remaining))
		}
	}
	*into = append(*into, sl.items...)
}

// pageSlot is what one goroutine of listPages reads a page into, and
// keeps from one of its pages to the next: the page's items, how many the
// server says remain after it, and the means to read and decode it.
type pageSlot[T any] struct {
	items     []T
	remaining *int64
	stream    pageStream
	decode    func([]byte, *T) error // from listSource.newDecoder; nil for Unmarshal and slim
	filtered  []byte                 // an item with wire's fields left out
}

// add appends the items of a decoded list to the slot's, each passed
// through slim (when not nil), and passes the list's continue token to next.
func (sl *pageSlot[T]) add(obj runtime.Object, resource string, slim func(*T), next func(string)) error {
	m, err := meta.ListAccessor(obj)
	if err != nil {
		return fmt.Errorf("returned object must be a list: %w", err)
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return err
	}
	if sl.items == nil {
		sl.items = make([]T, 0, len(items))
	}
	for _, o := range items {
		item, ok := any(o).(*T)
		if !ok {
			return fmt.Errorf("unexpected %T in %s list", o, resource)
		}
		if slim != nil {
			slim(item)
		}
		sl.items = append(sl.items, *item)
	}
	if r := m.GetRemainingItemCount(); r != nil {
		sl.remaining = new(*r)
	}
	next(m.GetContinue())
	return nil
}

// protobufPrefix starts every protobuf-encoded API object (see
// k8s.io/apimachinery/pkg/runtime/serializer/protobuf).
var protobufPrefix = []byte{0x6b, 0x38, 0x73, 0x00}

// fetchPage lists one page of resource into sl and passes
// its continue token to next. A protobuf page is decoded as it streams in
// (streamList), so the client never holds a whole page (pages of 5,000
// nodes or pods are tens of MB, and growing a buffer to hold one was a
// third of the memory a plan allocated). Anything else (JSON) is read
// whole and decoded.
func fetchPage[T any, PT protoItem[T]](ctx context.Context, rc *rest.RESTClient, resource string, o metav1.ListOptions, sl *pageSlot[T],
	wire *wireFilter, slim func(*T), next func(string)) error {
	// streamed: the transport retries up to the answer, relisting after
	body, err := rc.Get().Resource(resource).VersionedParams(&o, scheme.ParameterCodec).Stream(transport.Streamed(ctx))
	if err != nil {
		return err
	}
	defer body.Close()
	r := &sl.stream
	r.reset(body)
	prefix, err := r.next(len(protobufPrefix))
	if err != nil && err != io.ErrUnexpectedEOF {
		return err
	}
	if !bytes.Equal(prefix, protobufPrefix) {
		return sl.addWhole(r, prefix, resource, slim, next)
	}
	if err := streamList[T, PT](r, sl, wire, slim, next); err != nil {
		return fmt.Errorf("cannot decode the %s list: %w", resource, err)
	}
	return nil
}

// addWhole reads the rest of a page that is not protobuf, decodes it
// whole, and adds its items as add does.
func (sl *pageSlot[T]) addWhole(r io.Reader, prefix []byte, resource string, slim func(*T), next func(string)) error {
	rest, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(append(slices.Clip(prefix), rest...), nil, nil)
	if err != nil {
		return err
	}
	return sl.add(obj, resource, slim, next)
}

// streamList decodes a protobuf page from r into sl, one item at a time.
// The page is an envelope (runtime.Unknown, the list in its field 2)
// around a list whose field 1 is the ListMeta, with the continue token,
// passed to next as soon as it is read, and field 2 each item (decodeItem).
func streamList[T any, PT protoItem[T]](r *pageStream, sl *pageSlot[T], wire *wireFilter, slim func(*T), next func(string)) error {
	var lm metav1.ListMeta
	list := false
	err := streamFields(r, -1, func(num protowire.Number, n int) error {
		if num != 2 {
			_, err := r.Discard(n)
			return err
		}
		list = true
		return streamFields(r, int64(n), func(num protowire.Number, n int) error {
			if num != 1 && num != 2 {
				_, err := r.Discard(n)
				return err
			}
			// Decoding copies what it keeps out of the bytes it is
			// given, so an item is decoded where it was gunzipped to.
			b, err := r.next(n)
			if err != nil {
				return err
			}
			if num == 2 {
				return decodeItem[T, PT](sl, b, wire, slim)
			}
			if err := lm.Unmarshal(b); err != nil {
				return err
			}
			// a full page and what is left: the list's size where
			// the server says it (not for a filtered list)
			sl.remaining = lm.RemainingItemCount
			next(lm.Continue)
			return nil
		})
	})
	if err == nil && !list {
		err = errors.New("no list in the envelope")
	}
	if err != nil {
		return err
	}
	next(lm.Continue) // a list without its ListMeta: the last page
	return nil
}

// decodeItem appends the protobuf item b to sl's items, decoded by
// sl.decode when not nil, else filtered by wire (when not nil),
// unmarshalled and slimmed.
func decodeItem[T any, PT protoItem[T]](sl *pageSlot[T], b []byte, wire *wireFilter, slim func(*T)) error {
	var zero T
	sl.items = append(sl.items, zero)
	it := &sl.items[len(sl.items)-1]
	if sl.decode != nil {
		return sl.decode(b, it)
	}
	if wire != nil {
		var err error
		if sl.filtered, err = wire.filter(sl.filtered[:0], b); err != nil {
			return err
		}
		b = sl.filtered
	}
	if err := PT(it).Unmarshal(b); err != nil {
		return err
	}
	if slim != nil {
		slim(it)
	}
	return nil
}

// streamFields reads the fields of a protobuf message of size bytes from
// r, or up to the end of r when size is negative. It calls fn with the
// number and length of each length-delimited field, and fn reads or
// discards exactly that many bytes; other fields are skipped.
func streamFields(r *pageStream, size int64, fn func(num protowire.Number, n int) error) error {
	for size != 0 {
		tag, err := binary.ReadUvarint(r)
		if err == io.EOF && size < 0 {
			return nil
		}
		if err != nil {
			return noEOF(err)
		}
		used := int64(protowire.SizeVarint(tag))
		num, typ := protowire.DecodeTag(tag)
		switch typ {
		case protowire.VarintType:
			v, err := binary.ReadUvarint(r)
			if err != nil {
				return noEOF(err)
			}
			used += int64(protowire.SizeVarint(v))
		case protowire.Fixed32Type, protowire.Fixed64Type:
			n := 4
			if typ == protowire.Fixed64Type {
				n = 8
			}
			if _, err := r.Discard(n); err != nil {
				return noEOF(err)
			}
			used += int64(n)
		case protowire.BytesType:
			n, err := binary.ReadUvarint(r)
			if err != nil {
				return noEOF(err)
			}
			if size >= 0 && int64(n) > size-used-int64(protowire.SizeVarint(n)) || n > math.MaxInt32 {
				return io.ErrUnexpectedEOF
			}
			if err := fn(num, int(n)); err != nil {
				return noEOF(err)
			}
			used += int64(protowire.SizeVarint(n)) + int64(n)
		default:
			return fmt.Errorf("field %d has wire type %d, which no API object uses", num, typ)
		}
		if size >= 0 {
			if used > size {
				return io.ErrUnexpectedEOF
			}
			size -= used
		}
	}
	return nil
}

// noEOF makes an end of the body inside a message the error it is.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// wireFilter says which fields of a protobuf message to leave out before
// decoding it: what is never decoded costs neither CPU nor garbage. It
// only ever leaves out what the item's slim function drops anyway (their
// agreement is TestTakeDecodesAsSlimmed's), so slim stays the one
// statement of what the plan reads. Nodes and the workload controllers
// use one (nodeWire, templateWire, statefulSetWire); pods have their own
// decoder instead (decodePod).
type wireFilter struct {
	only   []protowire.Number // when not empty, the only fields kept
	drop   []protowire.Number
	nested map[protowire.Number]*wireFilter
}

// nodeWire leaves out of a node, before it is decoded, what slimNode drops:
// its managed fields, and of the status the images, the volumes in use and
// attached (a node's image list alone is often most of it).
var nodeWire = &wireFilter{nested: map[protowire.Number]*wireFilter{
	1: {drop: []protowire.Number{17}},
	3: {drop: []protowire.Number{8, 9, 10}},
}}

// templateWire leaves out of a ReplicaSet or Deployment, before it is
// decoded, what slimReplicaSet and slimDeployment drop: its managed fields
// and its pod template (field 3 of either spec), as big as a pod each.
var templateWire = &wireFilter{nested: map[protowire.Number]*wireFilter{
	1: {drop: []protowire.Number{17}},
	2: {drop: []protowire.Number{3}},
}}

// statefulSetWire leaves out what slimStatefulSet drops: the managed
// fields, the pod template and the volume claim templates (spec fields 3
// and 4).
var statefulSetWire = &wireFilter{nested: map[protowire.Number]*wireFilter{
	1: {drop: []protowire.Number{17}},
	2: {drop: []protowire.Number{3, 4}},
}}

// filter appends to dst the message b without the fields f leaves out.
func (f *wireFilter) filter(dst, b []byte) ([]byte, error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		field := b[:n+m]
		b = b[n+m:]
		if len(f.only) > 0 && !slices.Contains(f.only, num) || slices.Contains(f.drop, num) {
			continue
		}
		sub := f.nested[num]
		if sub == nil || typ != protowire.BytesType {
			dst = append(dst, field...)
			continue
		}
		v, _ := protowire.ConsumeBytes(field[n:])
		// The nested message is filtered in place after room for its
		// length, which is at most its length unfiltered: no buffer per
		// message.
		dst = protowire.AppendTag(dst, num, protowire.BytesType)
		at, room := len(dst), protowire.SizeVarint(uint64(len(v)))
		for range room {
			dst = append(dst, 0)
		}
		var err error
		if dst, err = sub.filter(dst, v); err != nil {
			return nil, err
		}
		size := len(dst) - at - room
		width := len(protowire.AppendVarint(dst[at:at], uint64(size)))
		if width < room {
			copy(dst[at+width:], dst[at+room:])
			dst = dst[:len(dst)-(room-width)]
		}
	}
	return dst, nil
}
