package runner_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/runner"
	"github.com/softalloc/softalloc/internal/sim/classes"
)

func classesTestdata(name string) string {
	return filepath.Join("..", "sim", "classes", "testdata", name)
}

func TestNewClassesDefaultsToSeed000(t *testing.T) {
	cls, err := runner.NewClasses(runner.ClassesConfig{Seed: 1, Duration: 5 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, "seed000", cls.Workload.Name)
	assert.Equal(t, []string{"light", "middle", "heavy"}, names(cls.Workload))
	o, err := cls.RunClassTrial(context.Background(), algorithms.ClassTrial{Users: map[string]int{"light": 30}})
	require.NoError(t, err)
	assert.InEpsilon(t, 4/0.0039, o.Class("light").Throughput, 0.01, "30 light users keep 4 cores busy")

	r, err := cls.Trial(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 5.0, r.Seconds, "the measured window is the configured one")
}

func TestNewClassesLoadsTheFile(t *testing.T) {
	cls, err := runner.NewClasses(runner.ClassesConfig{WorkloadPath: classesTestdata("seed002-bursty.yaml"), NoSelector: true, Duration: time.Minute})
	require.NoError(t, err)
	r, err := cls.Trial(context.Background())
	require.NoError(t, err)
	require.Len(t, r.Classes, 1)
	assert.Zero(t, r.Classes[0].Switches, "no selector")
	assert.Equal(t, r.Classes[0].Approaches[0].Served, r.Classes[0].Completed, "every request on the full approach")

	_, err = runner.NewClasses(runner.ClassesConfig{WorkloadPath: classesTestdata("none.yaml")})
	assert.ErrorContains(t, err, "none.yaml")
	_, err = runner.NewClasses(runner.ClassesConfig{Duration: -time.Second})
	assert.ErrorContains(t, err, "-1s")
}

// The trial report is its own type: it must carry every field of the
// simulator's result, or --trial would silently lose one.
func TestTrialReportCarriesEveryField(t *testing.T) {
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[classes.Result](), reflect.TypeFor[report.ClassTrialJSON]()},
		{reflect.TypeFor[classes.ClassResult](), reflect.TypeFor[report.TrialClassJSON]()},
		{reflect.TypeFor[classes.ApproachResult](), reflect.TypeFor[report.TrialApproachJSON]()},
		{reflect.TypeFor[classes.Bin](), reflect.TypeFor[report.TrialBinJSON]()},
	} {
		from, to := pair[0], pair[1]
		extra := 0
		if _, ok := to.FieldByName("Version"); ok {
			extra = 1 // the document says which softalloc wrote it
		}
		assert.Equal(t, from.NumField()+extra, to.NumField(), "%v and %v", from, to)
		for i := range from.NumField() {
			_, ok := to.FieldByName(from.Field(i).Name)
			assert.True(t, ok, "%v has no %s", to, from.Field(i).Name)
		}
	}
}

func names(w algorithms.ClassWorkload) []string {
	var out []string
	for _, c := range w.Classes {
		out = append(out, c.Name)
	}
	return out
}
