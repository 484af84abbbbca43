# Procedures shared by the generated pynq-rl Vivado scripts.
#
# pynq_rl/overlay/build/vivado.py writes one script per step (package_<core>.tcl, bd.tcl, bitstream.tcl) from the spec into
# pynq_rl/overlay/build/out/<board>/tcl/; each sources this file. Everything here is independent of the spec: the values
# come in as arguments. Every Vivado command used here is in pynq_rl/overlay/build/tclcheck.py VIVADO_COMMANDS (commands
# present in both Vivado 2022.1 and 2024.1); `python -m pynq_rl.overlay.build check` runs all scripts in tclsh
# with recording stubs for those commands, so a typo, a wrong argument count or a command outside the list fails
# here, without Vivado.

namespace eval pynq_rl {
    # Vivado releases the flow is written for: 2022.1 (PYNQ v3.0 images) and 2024.1 (PYNQ v3.1 images).
    variable supported_versions {2022.1 2024.1}
}

# Warn (do not fail) on a Vivado release other than the supported ones; return the release.
proc pynq_rl::check_version {} {
    variable supported_versions
    set release [version -short]
    if {[lsearch -exact $supported_versions $release] < 0} {
        puts "WARNING: pynq-rl: Vivado $release is not one of the supported releases ($supported_versions):\
              PYNQ v3.0 images were built with 2022.1, v3.1 with 2024.1, IP versions may differ."
    }
    return $release
}

# Add the board file directory `repo` to Vivado's board repository paths, after the ones already set (a user's
# Vivado_init.tcl, the Vivado Store's): set_param replaces the list, so it is read first, as FINN's shell does.
proc pynq_rl::add_board_repo {repo} {
    set paths [get_param board.repoPaths]
    if {[lsearch -exact $paths $repo] < 0} {
        lappend paths $repo
    }
    set_param board.repoPaths $paths
}

# The newest installed board part matching `pattern` (e.g. *:pynq-z2:part0:*), checked against the FPGA part.
# `repo` (may be empty) is a directory of board files added to the board repository paths first.
proc pynq_rl::board_part {pattern board part repo} {
    if {$repo ne ""} {
        pynq_rl::add_board_repo $repo
    }
    set found [get_board_parts -quiet -latest_file_version $pattern]
    if {[llength $found] == 0} {
        error "pynq-rl: no board part matches '$pattern' for $board: its board files are not installed.\
               PYNQ-Z2 board files are not bundled with Vivado: install them from the Vivado Store\
               (Tools > Vivado Store > Boards, 'pynq-z2'), or unpack TUL's board files and pass\
               BOARD_REPO=<dir containing pynq-z2/> to make. The ZCU106 files ship with Vivado."
    }
    set board_part [lindex [lsort -dictionary $found] end]
    set board_fpga [get_property PART_NAME [get_board_parts $board_part]]
    if {$board_fpga ne $part} {
        error "pynq-rl: board part $board_part is for FPGA $board_fpga, the spec says $part for $board"
    }
    puts "pynq-rl: board part $board_part"
    return $board_part
}

# The IP definition of `vendor:library:name` in the catalog (the newest version), or an error naming it.
proc pynq_rl::ipdef {vln} {
    set defs [get_ipdefs -quiet -filter "VLNV =~ \"${vln}:*\""]
    if {[llength $defs] == 0} {
        error "pynq-rl: IP $vln is not in the IP catalog"
    }
    return [lindex [lsort -dictionary $defs] end]
}

# The exact IP definition `vlnv` (one of ours: packaged by `make ip`), or an error saying so.
proc pynq_rl::own_ipdef {vlnv} {
    set defs [get_ipdefs -quiet -filter "VLNV == \"$vlnv\""]
    if {[llength $defs] == 0} {
        error "pynq-rl: IP $vlnv is not in the IP repositories: run `make ip` first"
    }
    return [lindex $defs 0]
}

# ---------------------------------------------------------------------------------------------------------------
# IP packaging (make ip)
# ---------------------------------------------------------------------------------------------------------------

# Package the Verilog module `top` (file `verilog`) as IP `vlnv` into `ip_dir`; return the core.
proc pynq_rl::package_core {vlnv top verilog ip_dir project_dir part description} {
    if {![file exists $verilog]} {
        error "pynq-rl: $verilog does not exist: run `make verilog` first"
    }
    lassign [split $vlnv :] vendor library name version
    create_project -force pkg_$name $project_dir -part $part
    set_property target_language Verilog [current_project]
    add_files -norecurse $verilog
    set_property top $top [current_fileset]
    update_compile_order -fileset sources_1
    ipx::package_project -root_dir $ip_dir -vendor $vendor -library $library -taxonomy /UserIP \
        -import_files -set_current true
    set core [ipx::current_core]
    set_property name $name $core
    set_property version $version $core
    set_property display_name $name $core
    set_property description $description $core
    set_property supported_families {zynq Production zynquplus Production} $core
    return $core
}

# The bus interface `name` of `core`; an error if packaging did not infer it from the port names.
proc pynq_rl::require_bus_interface {core name} {
    set busif [ipx::get_bus_interfaces -quiet $name -of_objects $core]
    if {[llength $busif] == 0} {
        error "pynq-rl: IP packaging inferred no interface '$name' (ports ${name}_*): check the Verilog top"
    }
    return $busif
}

# The clock (or reset) interface of `core` driven by `port`: the one packaging inferred, or inferred now.
proc pynq_rl::signal_interface {core port kind} {
    set filter "BUS_TYPE_VLNV =~ \"xilinx.com:signal:${kind}:*\""
    set found [ipx::get_bus_interfaces -quiet -of_objects $core -filter $filter]
    if {[llength $found] == 0} {
        ipx::infer_bus_interface $port xilinx.com:signal:${kind}_rtl:1.0 $core
        set found [ipx::get_bus_interfaces -quiet -of_objects $core -filter $filter]
    }
    if {[llength $found] != 1} {
        error "pynq-rl: expected one $kind interface on port $port, found [llength $found]"
    }
    return $found
}

# Associate every interface in `busifs` with the clock on `clk_port`, the reset `rst_port` (active low) with it,
# and leave the clock's rate to the block design (see pynq_rl::unfix_rate).
proc pynq_rl::clock_and_reset {core clk_port rst_port busifs} {
    set clk [pynq_rl::signal_interface $core $clk_port clock]
    set rst [pynq_rl::signal_interface $core $rst_port reset]
    set polarity [ipx::get_bus_parameters -quiet POLARITY -of_objects $rst]
    if {[llength $polarity] == 0} {
        set polarity [ipx::add_bus_parameter POLARITY $rst]
    }
    set_property value ACTIVE_LOW $polarity
    set clk_name [get_property NAME $clk]
    pynq_rl::unfix_rate $clk
    foreach busif $busifs {
        ipx::associate_bus_interfaces -busif $busif -clock $clk_name $core
        pynq_rl::unfix_rate [ipx::get_bus_interfaces $busif -of_objects $core]
    }
    ipx::associate_bus_interfaces -clock $clk_name -reset [get_property NAME $rst] $core
}

# Remove the FREQ_HZ bus parameter packaging may have put on interface `busif`. A fixed rate (the packager's
# 100 MHz default) would clash in the block design with PL clock 0 at any other rate (BD 41-238, e.g. at the
# ZCU106's 187.5 MHz); without it IP integrator gives the interface the rate of the clock net that drives it.
proc pynq_rl::unfix_rate {busif} {
    if {[llength [ipx::get_bus_parameters -quiet FREQ_HZ -of_objects $busif]] > 0} {
        ipx::remove_bus_parameter FREQ_HZ $busif
    }
}

# The register address block "Reg" (range bytes) of the AXI-Lite slave `busif`, replacing what packaging made.
proc pynq_rl::register_block {core busif range} {
    set memory_map [ipx::get_memory_maps -quiet $busif -of_objects $core]
    if {[llength $memory_map] == 0} {
        set memory_map [ipx::add_memory_map $busif $core]
        set_property slave_memory_map_ref $busif [ipx::get_bus_interfaces $busif -of_objects $core]
    }
    foreach block [ipx::get_address_blocks -quiet -of_objects $memory_map] {
        ipx::remove_address_block [get_property NAME $block] $memory_map
    }
    set block [ipx::add_address_block Reg $memory_map]
    set_property range $range $block
    set_property width 32 $block
    set_property usage register $block
    return $block
}

# Declare register `name` in `block` (so PYNQ's register_map works on the board).
proc pynq_rl::add_register {block name offset size access description} {
    set reg [ipx::add_register $name $block]
    set_property address_offset $offset $reg
    set_property size $size $reg
    set_property access $access $reg
    set_property description $description $reg
    return $reg
}

# Declare field `name` of register `register` in `block`.
proc pynq_rl::add_field {block register name bit_offset bit_width access description} {
    set reg [ipx::get_registers $register -of_objects $block]
    set fld [ipx::add_field $name $reg]
    set_property bit_offset $bit_offset $fld
    set_property bit_width $bit_width $fld
    set_property access $access $fld
    set_property description $description $fld
    return $fld
}

# Finish and save the packaged core, then close the packaging project.
proc pynq_rl::save_core {core} {
    ipx::create_xgui_files $core
    ipx::update_checksums $core
    ipx::check_integrity $core
    ipx::save_core $core
    close_project
}

# ---------------------------------------------------------------------------------------------------------------
# Block design (make bd)
# ---------------------------------------------------------------------------------------------------------------

# A hierarchy `name` holding the core `name/core` (IP `vlnv`) and its AXI DMA `name/dma` in simple mode, its
# streams wired to the DMA; hierarchy pins S_AXI_CORE, S_AXI_DMA (AXI-Lite), M_AXI_MM2S, M_AXI_S2MM (memory),
# aclk, aresetn. `dma_config` is a list of CONFIG.<name> value pairs.
proc pynq_rl::core_hierarchy {name vlnv dma_config} {
    create_bd_cell -type hier $name
    create_bd_cell -type ip -vlnv [pynq_rl::own_ipdef $vlnv] $name/core
    create_bd_cell -type ip -vlnv [pynq_rl::ipdef xilinx.com:ip:axi_dma] $name/dma
    set_property -dict $dma_config [get_bd_cells $name/dma]
    create_bd_intf_pin -mode Slave -vlnv xilinx.com:interface:aximm_rtl:1.0 $name/S_AXI_CORE
    create_bd_intf_pin -mode Slave -vlnv xilinx.com:interface:aximm_rtl:1.0 $name/S_AXI_DMA
    create_bd_intf_pin -mode Master -vlnv xilinx.com:interface:aximm_rtl:1.0 $name/M_AXI_MM2S
    create_bd_intf_pin -mode Master -vlnv xilinx.com:interface:aximm_rtl:1.0 $name/M_AXI_S2MM
    create_bd_pin -dir I -type clk $name/aclk
    create_bd_pin -dir I -type rst $name/aresetn
    connect_bd_intf_net [get_bd_intf_pins $name/S_AXI_CORE] [get_bd_intf_pins $name/core/s_axi_control]
    connect_bd_intf_net [get_bd_intf_pins $name/S_AXI_DMA] [get_bd_intf_pins $name/dma/S_AXI_LITE]
    connect_bd_intf_net [get_bd_intf_pins $name/M_AXI_MM2S] [get_bd_intf_pins $name/dma/M_AXI_MM2S]
    connect_bd_intf_net [get_bd_intf_pins $name/M_AXI_S2MM] [get_bd_intf_pins $name/dma/M_AXI_S2MM]
    connect_bd_intf_net [get_bd_intf_pins $name/dma/M_AXIS_MM2S] [get_bd_intf_pins $name/core/s_axis]
    connect_bd_intf_net [get_bd_intf_pins $name/core/m_axis] [get_bd_intf_pins $name/dma/S_AXIS_S2MM]
    connect_bd_net [get_bd_pins $name/aclk] [get_bd_pins $name/core/aclk] [get_bd_pins $name/dma/s_axi_lite_aclk] \
        [get_bd_pins $name/dma/m_axi_mm2s_aclk] [get_bd_pins $name/dma/m_axi_s2mm_aclk]
    connect_bd_net [get_bd_pins $name/aresetn] [get_bd_pins $name/core/aresetn] [get_bd_pins $name/dma/axi_resetn]
}

# Tie the S2MM TKEEP input of the DMA in hierarchy `name` (a stream of `bytes` bytes per beat) to `ones`, all
# ones: the cores' m_axis carries no TKEEP, every byte is data, which is what AXI4-Stream means by an absent TKEEP
# (UG1037). Explicit, rather than whatever the DMA's default is for an input the stream connection leaves
# undriven; Vivado notes that this net overrides the pin's part of the interface connection (BD 41-1306).
proc pynq_rl::tie_tkeep {name bytes ones} {
    set cell [create_bd_cell -type ip -vlnv [pynq_rl::ipdef xilinx.com:ip:xlconstant] $name/tkeep_ones]
    set_property -dict [list CONFIG.CONST_WIDTH $bytes CONFIG.CONST_VAL $ones] $cell
    connect_bd_net [get_bd_pins $name/tkeep_ones/dout] [get_bd_pins $name/dma/s_axis_s2mm_tkeep]
}

# An AXI SmartConnect `name` with `num_si` slave and `num_mi` master ports.
proc pynq_rl::smartconnect {name num_si num_mi} {
    create_bd_cell -type ip -vlnv [pynq_rl::ipdef xilinx.com:ip:smartconnect] $name
    set_property -dict [list CONFIG.NUM_SI $num_si CONFIG.NUM_MI $num_mi] [get_bd_cells $name]
}

# Port `index` of a SmartConnect in its naming: S00_AXI, M01_AXI, ...
proc pynq_rl::port {direction index} {
    return [format "%s%02d_AXI" $direction $index]
}

# Map the slave address segment `segment` at `offset` (size `range`) in the address space `space`.
proc pynq_rl::map_segment {space segment offset range} {
    set seg [get_bd_addr_segs $segment]
    if {[llength $seg] != 1} {
        error "pynq-rl: address segment $segment not found (got [llength $seg])"
    }
    assign_bd_address -offset $offset -range $range -target_address_space [get_bd_addr_spaces $space] $seg -force
}

# ---------------------------------------------------------------------------------------------------------------
# Implementation (make bitstream)
# ---------------------------------------------------------------------------------------------------------------

# Run `run` (after a reset) to `step` with `jobs` jobs and fail unless its status says the step completed.
proc pynq_rl::run_to {run step jobs} {
    reset_run $run
    if {$step eq ""} {
        launch_runs $run -jobs $jobs
    } else {
        launch_runs $run -to_step $step -jobs $jobs
    }
    wait_on_run $run
    set status [get_property STATUS [get_runs $run]]
    set progress [get_property PROGRESS [get_runs $run]]
    set expected [expr {$step eq "" ? "synth_design" : $step}]
    if {$progress ne "100%" || ![string match "$expected Complete*" $status]} {
        error "pynq-rl: $run failed ($status, $progress): see its runme.log under the project's .runs/$run directory"
    }
    puts "pynq-rl: $run: $status"
}

# Write the timing and utilization reports into `report_dir`; fail on negative setup or hold slack.
proc pynq_rl::check_timing {report_dir fclk_mhz} {
    report_timing_summary -max_paths 10 -file [file join $report_dir timing_summary.rpt]
    report_utilization -file [file join $report_dir utilization.rpt]
    report_utilization -hierarchical -file [file join $report_dir utilization_hierarchical.rpt]
    set setup [get_timing_paths -delay_type max -max_paths 1 -nworst 1]
    set hold [get_timing_paths -delay_type min -max_paths 1 -nworst 1]
    if {[llength $setup] == 0 || [llength $hold] == 0} {
        error "pynq-rl: no timing paths: the design has no clock constraint"
    }
    set wns [get_property SLACK $setup]
    set whs [get_property SLACK $hold]
    foreach {kind slack} [list setup $wns hold $whs] {
        if {![string is double -strict $slack] || !($slack > -1e9 && $slack < 1e9)} {
            error "pynq-rl: worst $kind slack is '$slack', not a finite number (unconstrained paths?)"
        }
        if {$slack < 0} {
            error "pynq-rl: timing not met at $fclk_mhz MHz: worst $kind slack $slack ns\
                   (see [file join $report_dir timing_summary.rpt]): lower fclk_mhz in pynq_rl/overlay/spec/boards.py or fix the path"
        }
    }
    puts "pynq-rl: timing met at $fclk_mhz MHz: WNS $wns ns, WHS $whs ns"
}
