variable "nodes_file" {
  description = "Path of the nodes file (docs/nodes-file.md, schema docs/nodes-file.schema.json): the same YAML fleetd's file inventory reads."
  type        = string
}

variable "site_id" {
  description = "NetBox id of the site the devices belong to (folly)."
  type        = number
}

variable "role_id" {
  description = "NetBox id of the device role given to every node."
  type        = number
}

variable "device_type_id" {
  description = "NetBox id of the device type of a node whose class has no entry in device_type_ids."
  type        = number
}

variable "device_type_ids" {
  description = "NetBox device type id per machine class (the nodes file's class), overriding device_type_id."
  type        = map(number)
  default     = {}
}

variable "tags" {
  description = "Tags given to every device."
  type        = set(string)
  default     = []
}
