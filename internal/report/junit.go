package report

import (
	"encoding/xml"
	"fmt"
	"io"
)

// JUnit reports are what CI systems display as test results (GitLab's
// artifacts:reports:junit, GitHub through a test-report action): check
// writes one test case per capacity check.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"` // required by the JUnit schema Jenkins validates against; check has none
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteCheckJUnit writes check's verdict as a JUnit XML report; seconds is
// the campaign's wall time.
func WriteCheckJUnit(w io.Writer, doc CheckJSON, seconds float64) error {
	c := doc.Capacity
	suite := junitSuite{Name: "softalloc check " + c.Topology, Tests: len(doc.Checks), Time: fmt.Sprintf("%.3f", seconds),
		Properties: []junitProperty{{"topology", c.Topology}, {"runner", c.Runner}, {"allocation", c.Allocation},
			{"maxGoodput", fmt.Sprintf("%.1f", c.MaxGoodput)}, {"maxThroughput", fmt.Sprintf("%.1f", c.MaxThroughput)},
			{"critical", c.Critical}, {"version", doc.Version}}}
	for _, ch := range doc.Checks {
		tc := junitCase{Name: ch.Name, Classname: "softalloc.check." + c.Topology, Time: "0", SystemOut: ch.Message}
		if !ch.OK {
			suite.Failures++
			tc.Failure = &junitFailure{Message: ch.Message, Type: "capacity", Text: ch.Message}
		}
		suite.Cases = append(suite.Cases, tc)
	}
	// A check with no thresholds (recording a baseline) still measured the
	// capacity: one passing case says what, since Jenkins's junit step
	// fails a report without any.
	if len(suite.Cases) == 0 {
		suite.Tests = 1
		suite.Cases = []junitCase{{Name: "capacity", Classname: "softalloc.check." + c.Topology, Time: "0",
			SystemOut: fmt.Sprintf("max goodput %.1f pages/s at %g s, max throughput %.1f pages/s, critical %s (no threshold checked)",
				c.MaxGoodput, c.SLA, c.MaxThroughput, c.Critical)}}
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Tests: suite.Tests, Failures: suite.Failures, Suites: []junitSuite{suite}}); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}
