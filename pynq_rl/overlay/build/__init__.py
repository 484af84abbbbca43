"""Build flow: Verilog conversion, reports, the .hwh generator and the Vivado scripts."""
