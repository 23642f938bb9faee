<#
.SYNOPSIS
  Registers xocview for the current user: .onnx files open with xocview, and Explorer's
  "Open with" offers it for .json, PyTorch files (.pt2 .pt .pth .ckpt), .safetensors,
  .tflite, .keras, .h5, .pb, .pbtxt and .gguf. -Uninstall removes exactly what this script adds.

.DESCRIPTION
  Per-user keys under HKCU\Software\Classes, so no administrator rights are needed. A choice
  the user already made in "Open with > Always" (Explorer's UserChoice) still wins.

.EXAMPLE
  powershell -ExecutionPolicy Bypass -File packaging\windows\register.ps1
  powershell -ExecutionPolicy Bypass -File packaging\windows\register.ps1 -Exe C:\Apps\xocview\xocview.exe
  powershell -ExecutionPolicy Bypass -File packaging\windows\register.ps1 -Uninstall
#>
param(
    # xocview.exe of the folder `make package` builds (dist\xocview); pass -Exe for another place.
    [string]$Exe = (Join-Path $PSScriptRoot '..\..\dist\xocview\xocview.exe'),
    [switch]$Uninstall
)
$ErrorActionPreference = 'Stop'

$Classes = 'HKCU:\Software\Classes'
$OnnxProgId = 'xocview.onnx'
$JsonProgId = 'xocview.json'
$ModelProgId = 'xocview.model'
$WeightExtensions = @('.pt2', '.pt', '.pth', '.ckpt', '.safetensors', '.tflite', '.keras', '.h5', '.pb', '.pbtxt', '.gguf')
$OwnKeys = @("$Classes\$OnnxProgId", "$Classes\$JsonProgId", "$Classes\$ModelProgId",
             "$Classes\Applications\xocview.exe")

function Set-Value([string]$Key, [string]$Name, [string]$Value) {
    # Never New-Item -Force on a key that exists: it would wipe the other programs' values.
    if (-not (Test-Path -LiteralPath $Key)) { New-Item -Path $Key -Force | Out-Null }
    New-ItemProperty -LiteralPath $Key -Name $Name -Value $Value -PropertyType String -Force | Out-Null
}

function Remove-Value([string]$Key, [string]$Name) {
    if ((Test-Path -LiteralPath $Key) -and
        ($null -ne (Get-ItemProperty -LiteralPath $Key -Name $Name -ErrorAction SilentlyContinue))) {
        Remove-ItemProperty -LiteralPath $Key -Name $Name
    }
}

function Register-ProgId([string]$ProgId, [string]$Description, [string]$Command, [string]$Icon) {
    Set-Value "$Classes\$ProgId" '(default)' $Description
    Set-Value "$Classes\$ProgId\DefaultIcon" '(default)' $Icon
    Set-Value "$Classes\$ProgId\shell\open\command" '(default)' $Command
}

if ($Uninstall) {
    foreach ($key in $OwnKeys) {
        if (Test-Path -LiteralPath $key) { Remove-Item -LiteralPath $key -Recurse }
    }
    $onnx = "$Classes\.onnx"
    if ((Test-Path -LiteralPath $onnx) -and
        ((Get-ItemProperty -LiteralPath $onnx).'(default)' -eq $OnnxProgId)) {
        Remove-Value $onnx '(default)'
        Remove-Value $onnx 'Content Type'
    }
    Remove-Value "$onnx\OpenWithProgids" $OnnxProgId
    Remove-Value "$Classes\.json\OpenWithProgids" $JsonProgId
    foreach ($ext in $WeightExtensions) {
        $key = "$Classes\$ext\OpenWithProgids"
        Remove-Value $key $ModelProgId
        if ((Test-Path -LiteralPath $key) -and -not (Get-Item -LiteralPath $key).ValueCount) {
            Remove-Item -LiteralPath $key
        }
        $parent = "$Classes\$ext"
        if ((Test-Path -LiteralPath $parent) -and -not (Get-ChildItem -LiteralPath $parent) -and
            -not (Get-Item -LiteralPath $parent).ValueCount) {
            Remove-Item -LiteralPath $parent
        }
    }
    foreach ($key in @("$onnx\OpenWithProgids", $onnx)) {  # only if nothing else is left in them
        if ((Test-Path -LiteralPath $key) -and
            -not (Get-ChildItem -LiteralPath $key) -and
            -not (Get-Item -LiteralPath $key).ValueCount) {
            Remove-Item -LiteralPath $key
        }
    }
} else {
    if (-not (Test-Path -LiteralPath $Exe -PathType Leaf)) {
        Write-Error "xocview.exe not found at $Exe; build it with 'make package' or pass -Exe PATH"
        exit 1
    }
    $Exe = (Resolve-Path -LiteralPath $Exe).Path
    $command = "`"$Exe`" `"%1`""
    $icon = "`"$Exe`",0"
    Register-ProgId $OnnxProgId 'ONNX model' $command $icon
    Register-ProgId $JsonProgId 'Graph JSON (XOC, NNVM/MXNet/TVM, LightNet)' $command $icon
    Register-ProgId $ModelProgId 'Neural network model (PyTorch, safetensors, TFLite, Keras)' $command $icon
    # .onnx: xocview is the default; .json: one more entry in "Open with", not the default.
    Set-Value "$Classes\.onnx" '(default)' $OnnxProgId
    Set-Value "$Classes\.onnx" 'Content Type' 'application/x-onnx'
    Set-Value "$Classes\.onnx\OpenWithProgids" $OnnxProgId ''
    Set-Value "$Classes\.json\OpenWithProgids" $JsonProgId ''
    # PyTorch and safetensors files: offered in "Open with"; other tools may own them.
    foreach ($ext in $WeightExtensions) {
        Set-Value "$Classes\$ext\OpenWithProgids" $ModelProgId ''
    }
    $app = "$Classes\Applications\xocview.exe"
    Set-Value $app 'FriendlyAppName' 'xocview'
    Set-Value "$app\shell\open\command" '(default)' $command
    Set-Value "$app\SupportedTypes" '.onnx' ''
    Set-Value "$app\SupportedTypes" '.json' ''
    foreach ($ext in $WeightExtensions) { Set-Value "$app\SupportedTypes" $ext '' }
}

# Tell Explorer that associations changed (SHCNE_ASSOCCHANGED), so icons and menus refresh now.
Add-Type -Namespace Xocview -Name Shell -MemberDefinition @'
[System.Runtime.InteropServices.DllImport("shell32.dll")]
public static extern void SHChangeNotify(int eventId, uint flags, System.IntPtr item1, System.IntPtr item2);
'@
[Xocview.Shell]::SHChangeNotify(0x08000000, 0, [System.IntPtr]::Zero, [System.IntPtr]::Zero)
Write-Output $(if ($Uninstall) { 'xocview: file associations removed' } else { "xocview: .onnx opens with $Exe; .json, PyTorch, safetensors, TFLite and Keras files offer it" })
