package awsfake

import (
	"bytes"
	"encoding/xml"
	"strconv"
)

// node is a tiny XML tree: the two query protocols nest elements in
// different ways (member vs item lists, PascalCase vs camelCase), and a
// tree built by hand is simpler to get exactly right than struct tags.
type node struct {
	name string
	attr string // raw attribute text, e.g. ` xmlns="..."`
	text string
	kids []*node
}

func el(name string, kids ...*node) *node { return &node{name: name, kids: kids} }

func txt(name, value string) *node { return &node{name: name, text: value} }

func num[T int | int32 | int64](name string, v T) *node {
	return txt(name, strconv.FormatInt(int64(v), 10))
}

func boolean(name string, v bool) *node { return txt(name, strconv.FormatBool(v)) }

// list wraps items in a list element whose children are all named item
// ("member" for Auto Scaling, "item" for EC2).
func list(name, item string, kids []*node) *node {
	for _, k := range kids {
		k.name = item
	}
	return el(name, kids...)
}

func (n *node) add(kids ...*node) *node {
	for _, k := range kids {
		if k != nil {
			n.kids = append(n.kids, k)
		}
	}
	return n
}

func (n *node) write(b *bytes.Buffer) {
	b.WriteString("<" + n.name + n.attr + ">")
	if len(n.kids) == 0 {
		_ = xml.EscapeText(b, []byte(n.text))
	}
	for _, k := range n.kids {
		k.write(b)
	}
	b.WriteString("</" + n.name + ">")
}

func render(n *node) []byte {
	var b bytes.Buffer
	b.WriteString(xml.Header)
	n.write(&b)
	return b.Bytes()
}
