package plan

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestCloudTargetReadsEarlierRecords: a record written before aws's
// region, profile and keep-default-version moved into Options still
// resumes with them; a target written now reads back as it was.
func TestCloudTargetReadsEarlierRecords(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want       CloudTarget
	}{
		{"an earlier record", `{"region":"eu-west-1","profile":"ops","group":"ng","keepDefault":true}`,
			CloudTarget{Group: "ng", Options: map[string]string{"region": "eu-west-1", "profile": "ops", "keep-default-version": "true"}}},
		{"an earlier record without them", `{"group":"ng","image":"ami-1"}`, CloudTarget{Group: "ng", Image: "ami-1"}},
		{"a record of now", `{"group":"ng","options":{"region":"us-east-1","update-strategy":"MINIMAL"}}`,
			CloudTarget{Group: "ng", Options: map[string]string{"region": "us-east-1", "update-strategy": "MINIMAL"}}},
		{"options win over the earlier fields", `{"region":"eu-west-1","options":{"region":"us-east-1"}}`,
			CloudTarget{Options: map[string]string{"region": "us-east-1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got CloudTarget
			if err := json.Unmarshal([]byte(tc.json), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var again CloudTarget
			if err := json.Unmarshal(b, &again); err != nil || !reflect.DeepEqual(again, tc.want) {
				t.Errorf("written and read back: %+v (%v), want %+v", again, err, tc.want)
			}
		})
	}
}
