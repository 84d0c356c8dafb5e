package v2

import (
	"github.com/lockstep-dev/lockstep/codegen/internal/golden/forklossy/v1"
)

// The conversions 2.0.0 cannot generate: readiness moved into conditions,
// and the acknowledgement changed shape. Each calls the generated
// autoConvert for the members that did not change.
//
// Lossy: going down keeps only the Ready condition (as ready), and an
// acknowledgement's generation; going up cannot know a generation.

// convert_v1_Status_To_v2_Status turns ready into a Ready condition.
func convert_v1_Status_To_v2_Status(in *v1.Status, out *Status) error {
	if err := autoConvert_v1_Status_To_v2_Status(in, out); err != nil {
		return err
	}
	status := StatusConditionsItemStatusFalse
	if in.Ready {
		status = StatusConditionsItemStatusTrue
	}
	out.Conditions = []StatusConditionsItem{{Type: "Ready", Status: status}}
	return nil
}

// convert_v2_Status_To_v1_Status turns the Ready condition into ready; a
// status without one is not ready.
func convert_v2_Status_To_v1_Status(in *Status, out *v1.Status) error {
	if err := autoConvert_v2_Status_To_v1_Status(in, out); err != nil {
		return err
	}
	out.Ready = false
	for _, c := range in.Conditions {
		if c.Type == "Ready" {
			out.Ready = c.Status == StatusConditionsItemStatusTrue
		}
	}
	return nil
}

// convert_v2_Ack_To_v1_Ack drops the generation; the generated part
// carries accepted to ok, which codegen/diff finds renamed.
func convert_v2_Ack_To_v1_Ack(in *Ack, out *v1.Ack) error {
	return autoConvert_v2_Ack_To_v1_Ack(in, out)
}

// convert_v1_Ack_To_v2_Ack answers at generation 0; the generated part
// carries ok to accepted, which codegen/diff finds renamed.
func convert_v1_Ack_To_v2_Ack(in *v1.Ack, out *Ack) error {
	if err := autoConvert_v1_Ack_To_v2_Ack(in, out); err != nil {
		return err
	}
	out.Generation = 0
	return nil
}

// convert_v2_Tags_To_v1_Tags copies the tags: a node name longer than
// 1.0.0 allows is not shortened (another node's name could result), so it
// fails the check the generated Convert_v2_Tags_To_v1_Tags makes.
func convert_v2_Tags_To_v1_Tags(in *Tags, out *v1.Tags) error {
	return autoConvert_v2_Tags_To_v1_Tags(in, out)
}
